package enforcer

import (
	"fmt"

	"github.com/enforcerd/enforcerd/bpf"
)

// Hook identifies the kernel hook that produced a denial. LSM hooks carry the
// kernel's own names (security_<name> in include/linux/lsm_hook_defs.h);
// cgroup-BPF hooks carry their attach type's section name. The values are
// enum hook_id of bpf/event.h, through bpf2go (bpf.SharedHookId). Every
// attached LSM program and cgroup-BPF program records its own hook's id
// (audit schema 3); the few ids older programs used for one protection
// across hooks (hookLegacy*) are still decoded, under the name of the hook
// that most often produced them.
type Hook uint16

// The hooks, in enum hook_id order.
const (
	HookSocketCreate          = Hook(bpf.SharedHookIdHOOK_SOCKET_CREATE)
	HookSocketBind            = Hook(bpf.SharedHookIdHOOK_SOCKET_BIND)
	HookSocketConnect         = Hook(bpf.SharedHookIdHOOK_SOCKET_CONNECT)
	HookSocketListen          = Hook(bpf.SharedHookIdHOOK_SOCKET_LISTEN)
	HookSocketAccept          = Hook(bpf.SharedHookIdHOOK_SOCKET_ACCEPT)
	HookSocketSendmsg         = Hook(bpf.SharedHookIdHOOK_SOCKET_SENDMSG)
	HookSocketRecvmsg         = Hook(bpf.SharedHookIdHOOK_SOCKET_RECVMSG)
	HookUnixStreamConnect     = Hook(bpf.SharedHookIdHOOK_UNIX_STREAM_CONNECT)
	HookUnixMaySend           = Hook(bpf.SharedHookIdHOOK_UNIX_MAY_SEND)
	HookFileOpen              = Hook(bpf.SharedHookIdHOOK_FILE_OPEN)
	HookFilePermission        = Hook(bpf.SharedHookIdHOOK_FILE_PERMISSION)
	HookFileTruncate          = Hook(bpf.SharedHookIdHOOK_FILE_TRUNCATE)
	HookPathTruncate          = Hook(bpf.SharedHookIdHOOK_PATH_TRUNCATE)
	HookMmapFile              = Hook(bpf.SharedHookIdHOOK_MMAP_FILE)
	HookFileMprotect          = Hook(bpf.SharedHookIdHOOK_FILE_MPROTECT)
	HookFileIoctl             = Hook(bpf.SharedHookIdHOOK_FILE_IOCTL)
	HookInodeCreate           = Hook(bpf.SharedHookIdHOOK_INODE_CREATE)
	HookInodeLink             = Hook(bpf.SharedHookIdHOOK_INODE_LINK)
	HookInodeUnlink           = Hook(bpf.SharedHookIdHOOK_INODE_UNLINK)
	HookInodeSymlink          = Hook(bpf.SharedHookIdHOOK_INODE_SYMLINK)
	HookInodeMkdir            = Hook(bpf.SharedHookIdHOOK_INODE_MKDIR)
	HookInodeRmdir            = Hook(bpf.SharedHookIdHOOK_INODE_RMDIR)
	HookInodeMknod            = Hook(bpf.SharedHookIdHOOK_INODE_MKNOD)
	HookInodeRename           = Hook(bpf.SharedHookIdHOOK_INODE_RENAME)
	HookInodeSetattr          = Hook(bpf.SharedHookIdHOOK_INODE_SETATTR)
	HookInodeSetxattr         = Hook(bpf.SharedHookIdHOOK_INODE_SETXATTR)
	HookInodeRemovexattr      = Hook(bpf.SharedHookIdHOOK_INODE_REMOVEXATTR)
	HookInodeSetACL           = Hook(bpf.SharedHookIdHOOK_INODE_SET_ACL)
	HookInodeRemoveACL        = Hook(bpf.SharedHookIdHOOK_INODE_REMOVE_ACL)
	HookCgroupSockCreate      = Hook(bpf.SharedHookIdHOOK_CGROUP_SOCK_CREATE)
	HookCgroupConnect4        = Hook(bpf.SharedHookIdHOOK_CGROUP_CONNECT4)
	HookCgroupConnect6        = Hook(bpf.SharedHookIdHOOK_CGROUP_CONNECT6)
	HookCgroupSendmsg4        = Hook(bpf.SharedHookIdHOOK_CGROUP_SENDMSG4)
	HookCgroupSendmsg6        = Hook(bpf.SharedHookIdHOOK_CGROUP_SENDMSG6)
	HookBprmCheckSecurity     = Hook(bpf.SharedHookIdHOOK_BPRM_CHECK_SECURITY)
	HookBPF                   = Hook(bpf.SharedHookIdHOOK_BPF)
	HookPtraceAccessCheck     = Hook(bpf.SharedHookIdHOOK_PTRACE_ACCESS_CHECK)
	HookTaskKill              = Hook(bpf.SharedHookIdHOOK_TASK_KILL)
	HookInodePermission       = Hook(bpf.SharedHookIdHOOK_INODE_PERMISSION)
	HookSbMount               = Hook(bpf.SharedHookIdHOOK_SB_MOUNT)
	HookSbUmount              = Hook(bpf.SharedHookIdHOOK_SB_UMOUNT)
	HookSbRemount             = Hook(bpf.SharedHookIdHOOK_SB_REMOUNT)
	HookMoveMount             = Hook(bpf.SharedHookIdHOOK_MOVE_MOUNT)
	HookSbPivotroot           = Hook(bpf.SharedHookIdHOOK_SB_PIVOTROOT)
	hookLegacyTTYIoctl        = Hook(bpf.SharedHookIdHOOK_TTY_IOCTL)
	hookLegacyBPFFSUnlink     = Hook(bpf.SharedHookIdHOOK_BPFFS_UNLINK)
	HookPtraceTraceme         = Hook(bpf.SharedHookIdHOOK_PTRACE_TRACEME)
	HookFileFcntl             = Hook(bpf.SharedHookIdHOOK_FILE_FCNTL)
	HookCapable               = Hook(bpf.SharedHookIdHOOK_CAPABLE)
	hookLegacyKernelSetting   = Hook(bpf.SharedHookIdHOOK_KERNEL_SETTING)
	HookKernelModuleRequest   = Hook(bpf.SharedHookIdHOOK_KERNEL_MODULE_REQUEST)
	HookTaskSetscheduler      = Hook(bpf.SharedHookIdHOOK_TASK_SETSCHEDULER)
	hookLegacyProcWrite       = Hook(bpf.SharedHookIdHOOK_PROC_WRITE)
	hookLegacyKmsgWrite       = Hook(bpf.SharedHookIdHOOK_KMSG_WRITE)
	HookSocketGetsockopt      = Hook(bpf.SharedHookIdHOOK_SOCKET_GETSOCKOPT)
	HookSocketSetsockopt      = Hook(bpf.SharedHookIdHOOK_SOCKET_SETSOCKOPT)
	HookSocketShutdown        = Hook(bpf.SharedHookIdHOOK_SOCKET_SHUTDOWN)
	HookFileIoctlCompat       = Hook(bpf.SharedHookIdHOOK_FILE_IOCTL_COMPAT)
	HookUringCmd              = Hook(bpf.SharedHookIdHOOK_URING_CMD)
	HookIPCPermission         = Hook(bpf.SharedHookIdHOOK_IPC_PERMISSION)
	HookShmShmat              = Hook(bpf.SharedHookIdHOOK_SHM_SHMAT)
	HookShmAssociate          = Hook(bpf.SharedHookIdHOOK_SHM_ASSOCIATE)
	HookKeyAlloc              = Hook(bpf.SharedHookIdHOOK_KEY_ALLOC)
	HookKeyPermission         = Hook(bpf.SharedHookIdHOOK_KEY_PERMISSION)
	HookTaskSetrlimit         = Hook(bpf.SharedHookIdHOOK_TASK_SETRLIMIT)
	HookTaskSetnice           = Hook(bpf.SharedHookIdHOOK_TASK_SETNICE)
	HookTaskSetioprio         = Hook(bpf.SharedHookIdHOOK_TASK_SETIOPRIO)
	HookTaskPrlimit           = Hook(bpf.SharedHookIdHOOK_TASK_PRLIMIT)
	HookFileSendSigiotask     = Hook(bpf.SharedHookIdHOOK_FILE_SEND_SIGIOTASK)
	HookShmShmctl             = Hook(bpf.SharedHookIdHOOK_SHM_SHMCTL)
	HookMsgQueueMsgctl        = Hook(bpf.SharedHookIdHOOK_MSG_QUEUE_MSGCTL)
	HookSemSemctl             = Hook(bpf.SharedHookIdHOOK_SEM_SEMCTL)
	HookMsgQueueAssociate     = Hook(bpf.SharedHookIdHOOK_MSG_QUEUE_ASSOCIATE)
	HookSemAssociate          = Hook(bpf.SharedHookIdHOOK_SEM_ASSOCIATE)
	HookShmAllocSecurity      = Hook(bpf.SharedHookIdHOOK_SHM_ALLOC_SECURITY)
	HookMsgQueueAllocSecurity = Hook(bpf.SharedHookIdHOOK_MSG_QUEUE_ALLOC_SECURITY)
	HookSemAllocSecurity      = Hook(bpf.SharedHookIdHOOK_SEM_ALLOC_SECURITY)
	HookBprmCommittedCreds    = Hook(bpf.SharedHookIdHOOK_BPRM_COMMITTED_CREDS)
	HookTaskAlloc             = Hook(bpf.SharedHookIdHOOK_TASK_ALLOC)
	HookShmFreeSecurity       = Hook(bpf.SharedHookIdHOOK_SHM_FREE_SECURITY)
	HookMsgQueueFreeSecurity  = Hook(bpf.SharedHookIdHOOK_MSG_QUEUE_FREE_SECURITY)
	HookSemFreeSecurity       = Hook(bpf.SharedHookIdHOOK_SEM_FREE_SECURITY)
	HookKeyFree               = Hook(bpf.SharedHookIdHOOK_KEY_FREE)
	HookInodeAllocSecurity    = Hook(bpf.SharedHookIdHOOK_INODE_ALLOC_SECURITY)
	HookFileLock              = Hook(bpf.SharedHookIdHOOK_FILE_LOCK)
	HookTaskPrctl             = Hook(bpf.SharedHookIdHOOK_TASK_PRCTL)
	HookDInstantiate          = Hook(bpf.SharedHookIdHOOK_D_INSTANTIATE)
	HookInodeFreeSecurity     = Hook(bpf.SharedHookIdHOOK_INODE_FREE_SECURITY)
)

type hookInfo struct {
	name      string // kernel hook / attach name
	operation string // what the process tried, for humans and the audit log
	// legacy: an id older programs recorded for one protection at
	// several hooks; rule is that protection (their records carry none).
	legacy bool
	rule   Rule
}

var hookTable = map[Hook]hookInfo{
	HookSocketCreate:          {name: "socket_create", operation: "socket"},
	HookSocketBind:            {name: "socket_bind", operation: "bind"},
	HookSocketConnect:         {name: "socket_connect", operation: "connect"},
	HookSocketListen:          {name: "socket_listen", operation: "listen"},
	HookSocketAccept:          {name: "socket_accept", operation: "accept"},
	HookSocketSendmsg:         {name: "socket_sendmsg", operation: "send"},
	HookSocketRecvmsg:         {name: "socket_recvmsg", operation: "receive"},
	HookUnixStreamConnect:     {name: "unix_stream_connect", operation: "connect"},
	HookUnixMaySend:           {name: "unix_may_send", operation: "send"},
	HookFileOpen:              {name: "file_open", operation: "open-for-write"},
	HookFilePermission:        {name: "file_permission", operation: "write"},
	HookFileTruncate:          {name: "file_truncate", operation: "truncate"},
	HookPathTruncate:          {name: "path_truncate", operation: "truncate"},
	HookMmapFile:              {name: "mmap_file", operation: "mmap-shared-write"},
	HookFileMprotect:          {name: "file_mprotect", operation: "mprotect-shared-write"},
	HookFileIoctl:             {name: "file_ioctl", operation: "ioctl"},
	HookInodeCreate:           {name: "inode_create", operation: "create"},
	HookInodeLink:             {name: "inode_link", operation: "link"},
	HookInodeUnlink:           {name: "inode_unlink", operation: "unlink"},
	HookInodeSymlink:          {name: "inode_symlink", operation: "symlink"},
	HookInodeMkdir:            {name: "inode_mkdir", operation: "mkdir"},
	HookInodeRmdir:            {name: "inode_rmdir", operation: "rmdir"},
	HookInodeMknod:            {name: "inode_mknod", operation: "mknod"},
	HookInodeRename:           {name: "inode_rename", operation: "rename"},
	HookInodeSetattr:          {name: "inode_setattr", operation: "setattr"},
	HookInodeSetxattr:         {name: "inode_setxattr", operation: "setxattr"},
	HookInodeRemovexattr:      {name: "inode_removexattr", operation: "removexattr"},
	HookInodeSetACL:           {name: "inode_set_acl", operation: "set-acl"},
	HookInodeRemoveACL:        {name: "inode_remove_acl", operation: "remove-acl"},
	HookCgroupSockCreate:      {name: "cgroup/sock_create", operation: "socket"},
	HookCgroupConnect4:        {name: "cgroup/connect4", operation: "connect"},
	HookCgroupConnect6:        {name: "cgroup/connect6", operation: "connect"},
	HookCgroupSendmsg4:        {name: "cgroup/sendmsg4", operation: "send"},
	HookCgroupSendmsg6:        {name: "cgroup/sendmsg6", operation: "send"},
	HookBprmCheckSecurity:     {name: "bprm_check_security", operation: "exec"},
	HookBPF:                   {name: "bpf", operation: "bpf"},
	HookPtraceAccessCheck:     {name: "ptrace_access_check", operation: "ptrace"},
	HookTaskKill:              {name: "task_kill", operation: "signal"},
	HookInodePermission:       {name: "inode_permission", operation: "write-access"},
	HookSbMount:               {name: "sb_mount", operation: "mount"},
	HookSbUmount:              {name: "sb_umount", operation: "umount"},
	HookSbRemount:             {name: "sb_remount", operation: "remount"},
	HookMoveMount:             {name: "move_mount", operation: "move-mount"},
	HookSbPivotroot:           {name: "sb_pivotroot", operation: "pivot-root"},
	hookLegacyTTYIoctl:        {name: "file_ioctl", operation: "ioctl", legacy: true, rule: RuleTTYInject},
	hookLegacyBPFFSUnlink:     {name: "inode_unlink", operation: "unlink", legacy: true, rule: RulePinRemoval},
	HookPtraceTraceme:         {name: "ptrace_traceme", operation: "ptrace-traceme"},
	HookFileFcntl:             {name: "file_fcntl", operation: "fcntl"},
	HookCapable:               {name: "capable", operation: "use-capability"},
	hookLegacyKernelSetting:   {name: "inode_permission", operation: "write-access", legacy: true, rule: RuleKernelSetting},
	HookKernelModuleRequest:   {name: "kernel_module_request", operation: "load-kernel-module"},
	HookTaskSetscheduler:      {name: "task_setscheduler", operation: "set-scheduling"},
	hookLegacyProcWrite:       {name: "inode_permission", operation: "write-access", legacy: true, rule: RuleProcOutside},
	hookLegacyKmsgWrite:       {name: "file_permission", operation: "write", legacy: true, rule: RuleKmsg},
	HookSocketGetsockopt:      {name: "socket_getsockopt", operation: "getsockopt"},
	HookSocketSetsockopt:      {name: "socket_setsockopt", operation: "setsockopt"},
	HookSocketShutdown:        {name: "socket_shutdown", operation: "shutdown"},
	HookFileIoctlCompat:       {name: "file_ioctl_compat", operation: "ioctl"},
	HookUringCmd:              {name: "uring_cmd", operation: "io-uring-passthrough"},
	HookIPCPermission:         {name: "ipc_permission", operation: "use-ipc-object"},
	HookShmShmat:              {name: "shm_shmat", operation: "attach-shared-memory"},
	HookShmAssociate:          {name: "shm_associate", operation: "open-ipc-object"},
	HookKeyAlloc:              {name: "key_alloc", operation: "create-key"},
	HookKeyPermission:         {name: "key_permission", operation: "use-key"},
	HookTaskSetrlimit:         {name: "task_setrlimit", operation: "change-resource-limit"},
	HookTaskSetnice:           {name: "task_setnice", operation: "set-priority"},
	HookTaskSetioprio:         {name: "task_setioprio", operation: "set-io-priority"},
	HookTaskPrlimit:           {name: "task_prlimit", operation: "change-resource-limit"},
	HookFileSendSigiotask:     {name: "file_send_sigiotask", operation: "send-io-signal"},
	HookShmShmctl:             {name: "shm_shmctl", operation: "control-ipc-object"},
	HookMsgQueueMsgctl:        {name: "msg_queue_msgctl", operation: "control-ipc-object"},
	HookSemSemctl:             {name: "sem_semctl", operation: "control-ipc-object"},
	HookMsgQueueAssociate:     {name: "msg_queue_associate", operation: "open-ipc-object"},
	HookSemAssociate:          {name: "sem_associate", operation: "open-ipc-object"},
	HookShmAllocSecurity:      {name: "shm_alloc_security", operation: "create-ipc-object"},
	HookMsgQueueAllocSecurity: {name: "msg_queue_alloc_security", operation: "create-ipc-object"},
	HookSemAllocSecurity:      {name: "sem_alloc_security", operation: "create-ipc-object"},
	HookBprmCommittedCreds:    {name: "bprm_committed_creds", operation: "exec"},
	HookTaskAlloc:             {name: "task_alloc", operation: "fork"},
	HookShmFreeSecurity:       {name: "shm_free_security", operation: "remove-ipc-object"},
	HookMsgQueueFreeSecurity:  {name: "msg_queue_free_security", operation: "remove-ipc-object"},
	HookSemFreeSecurity:       {name: "sem_free_security", operation: "remove-ipc-object"},
	HookKeyFree:               {name: "key_free", operation: "remove-key"},
	HookInodeAllocSecurity:    {name: "inode_alloc_security", operation: "create-ipc-object"},
	HookFileLock:              {name: "file_lock", operation: "lock"},
	HookTaskPrctl:             {name: "task_prctl", operation: "prctl"},
	HookDInstantiate:          {name: "d_instantiate", operation: "create"},
	HookInodeFreeSecurity:     {name: "inode_free_security", operation: "remove-pty"},
}

// AllHooks lists every hook id, legacy ones included, for exhaustiveness
// tests and metrics (bpf/hooks_test.go checks it against enum hook_id in
// the objects' BTF).
var AllHooks = func() []Hook {
	hs := make([]Hook, 0, len(hookTable))
	for h := Hook(1); int(h) <= len(hookTable); h++ {
		hs = append(hs, h)
	}
	return hs
}()

// HookByName is the hook a program attached by the given name records
// (its ELF section without the "lsm/" prefix, or "cgroup/<attach>"); ok
// false when no hook id has that name. Legacy ids never match.
func HookByName(name string) (Hook, bool) {
	for h, i := range hookTable {
		if i.name == name && !i.legacy {
			return h, true
		}
	}
	return 0, false
}

// Legacy reports whether h is an id only programs older than audit schema
// 3 recorded (one protection at several hooks); its String is the hook
// that most often produced it.
func (h Hook) Legacy() bool { return hookTable[h].legacy }

// String is the kernel's name of the hook ("file_open", "cgroup/connect4").
func (h Hook) String() string {
	if i, ok := hookTable[h]; ok {
		return i.name
	}
	return fmt.Sprintf("hook(%d)", uint16(h))
}

// Operation is what the denied process tried at this hook ("create",
// "connect", ...); Denial.Operation refines it by the rule.
func (h Hook) Operation() string {
	if i, ok := hookTable[h]; ok {
		return i.operation
	}
	return "unknown"
}

// Rule names the protection that decided a denial (Denial.Rule): one of a
// closed set (AllRules, docs/audit.md). The field rules (RuleNetwork,
// RuleWrite, RuleShellNone, RuleShellReadOnly) are the ceiling fields
// themselves; the others are the escape and tamper protections every
// registration implies (field "tamper"), and two refinements of the shell
// field. Records carry enum rule_id of bpf/event.h in the bits
// RULE_SHIFT and up of their deny bit.
type Rule string

// The rules.
const (
	RuleNetwork         Rule = "network"           // network=false
	RuleWrite           Rule = "write"             // write=false (and a read_only shell's exec'd processes)
	RuleShellNone       Rule = "shell-none"        // shell=none: exec of a file off the allow list
	RuleShellReadOnly   Rule = "shell-read-only"   // shell=read_only: exec of a file the sandbox wrote
	RuleTamper          Rule = "tamper"            // a tamper record of a program older than schema 3
	RuleBPFSyscall      Rule = "bpf-syscall"       // bpf(2)
	RulePtraceOutside   Rule = "ptrace-outside"    // ptrace of, or PTRACE_TRACEME to, a process outside
	RuleSignalOutside   Rule = "signal-outside"    // a signal to a process outside
	RuleSigioOwner      Rule = "sigio-owner"       // I/O signals to a process outside (F_SETOWN, FIOSETOWN, O_ASYNC, SIGIO)
	RuleKernelSetting   Rule = "kernel-setting"    // a write to a kernel interface filesystem (/proc/sys, sysfs, ...)
	RuleCgroupOutside   Rule = "cgroup-outside"    // a cgroup outside the sandbox subtree (incl. moving out)
	RuleCgroupOwnLimits Rule = "cgroup-own-limits" // the registered cgroup's own resource files
	RuleProcOutside     Rule = "proc-outside"      // /proc/<pid> of a process outside
	RuleProcPIDFile     Rule = "proc-pid-file"     // a /proc/<pid> file acting beyond its process (autogroup)
	RuleKmsg            Rule = "kmsg"              // a write to /dev/kmsg
	RuleMount           Rule = "mount"             // a change of the mount table
	RuleCapability      Rule = "capability"        // a capability off the allow list
	RuleKernelModule    Rule = "kernel-module"     // a kernel module load request
	RuleProcessOutside  Rule = "process-outside"   // priority, scheduling or limits of a process outside
	RuleCoreDumpLimit   Rule = "core-dump-limit"   // RLIMIT_CORE other than 1 (core-dump pipe helpers)
	RuleURingCmd        Rule = "uring-cmd"         // io_uring command passthrough
	RuleIPCOutside      Rule = "ipc-outside"       // an IPC object (SysV, POSIX message queue) created outside
	RuleOwnerUnrecorded Rule = "owner-unrecorded"  // an IPC object or key whose creator could not be recorded
	RuleKeyRequestAuth  Rule = "key-request-auth"  // a request_key authorisation key
	RuleKeyOutside      Rule = "key-outside"       // a key created outside
	RulePinRemoval      Rule = "pin-removal"       // removing or replacing a bpffs pin
	RuleKernelAttr      Rule = "kernel-attr"       // attributes of a kernel interface file
	RuleRawStorage      Rule = "raw-storage"       // raw block device or passthrough storage writes
	RuleTTYInject       Rule = "tty-inject"        // terminal input injection, console state
	RuleCodeMapping     Rule = "code-mapping"      // shell: an executable mapping of a memfd or written file
	RuleShellPtrace     Rule = "shell-ptrace"      // shell=read_only: ptrace of a process that may write
	RuleExecOpen        Rule = "exec-open"         // shell: an open for exec of an unlisted program interpreter (or a written file)
	RuleTaskName        Rule = "task-name"         // setting the task name (prctl PR_SET_NAME)
	RuleHostDevice      Rule = "host-device"       // a device node off the allow list (null-like, own terminals, Entry.AllowDevices)
	RuleTerminalOutside Rule = "terminal-outside"  // a terminal neither declared own nor created inside, beyond a read-only query
	RuleConsoleEgress   Rule = "console-egress"    // network=false with DenyConsoleEgress: an own terminal that leaves the machine
)

// ruleTable maps enum rule_id (bpf/event.h) to its rule and the operation
// a record of it shows ("" : the hook's).
var ruleTable = map[bpf.SharedRuleId]struct {
	rule      Rule
	operation string
}{
	bpf.SharedRuleIdRULE_BPF_SYSCALL:       {RuleBPFSyscall, ""},
	bpf.SharedRuleIdRULE_PTRACE_OUTSIDE:    {RulePtraceOutside, ""},
	bpf.SharedRuleIdRULE_SIGNAL_OUTSIDE:    {RuleSignalOutside, ""},
	bpf.SharedRuleIdRULE_SIGIO_OWNER:       {RuleSigioOwner, "set-signal-owner"},
	bpf.SharedRuleIdRULE_KERNEL_SETTING:    {RuleKernelSetting, "write-kernel-setting"},
	bpf.SharedRuleIdRULE_CGROUP_OUTSIDE:    {RuleCgroupOutside, "write-outside-cgroup"},
	bpf.SharedRuleIdRULE_CGROUP_OWN_LIMITS: {RuleCgroupOwnLimits, "write-cgroup-limits"},
	bpf.SharedRuleIdRULE_PROC_OUTSIDE:      {RuleProcOutside, "write-process-state"},
	bpf.SharedRuleIdRULE_PROC_PID_FILE:     {RuleProcPIDFile, "write-process-state"},
	bpf.SharedRuleIdRULE_KMSG:              {RuleKmsg, "write-kernel-log"},
	bpf.SharedRuleIdRULE_MOUNT:             {RuleMount, ""},
	bpf.SharedRuleIdRULE_CAPABILITY:        {RuleCapability, ""},
	bpf.SharedRuleIdRULE_KERNEL_MODULE:     {RuleKernelModule, ""},
	bpf.SharedRuleIdRULE_PROCESS_OUTSIDE:   {RuleProcessOutside, "change-process-limits"},
	bpf.SharedRuleIdRULE_CORE_DUMP_LIMIT:   {RuleCoreDumpLimit, ""},
	bpf.SharedRuleIdRULE_URING_CMD:         {RuleURingCmd, ""},
	bpf.SharedRuleIdRULE_IPC_OUTSIDE:       {RuleIPCOutside, ""},
	bpf.SharedRuleIdRULE_OWNER_UNRECORDED:  {RuleOwnerUnrecorded, ""},
	bpf.SharedRuleIdRULE_KEY_REQUEST_AUTH:  {RuleKeyRequestAuth, ""},
	bpf.SharedRuleIdRULE_KEY_OUTSIDE:       {RuleKeyOutside, ""},
	bpf.SharedRuleIdRULE_PIN_REMOVAL:       {RulePinRemoval, "remove-pin"},
	bpf.SharedRuleIdRULE_KERNEL_ATTR:       {RuleKernelAttr, ""},
	bpf.SharedRuleIdRULE_RAW_STORAGE:       {RuleRawStorage, "raw-storage-write"},
	bpf.SharedRuleIdRULE_TTY_INJECT:        {RuleTTYInject, "tty-inject"},
	bpf.SharedRuleIdRULE_CODE_MAPPING:      {RuleCodeMapping, "map-executable"},
	bpf.SharedRuleIdRULE_SHELL_PTRACE:      {RuleShellPtrace, ""},
	bpf.SharedRuleIdRULE_EXEC_OPEN:         {RuleExecOpen, "exec-interpreter"},
	bpf.SharedRuleIdRULE_TASK_NAME:         {RuleTaskName, "set-task-name"},
	bpf.SharedRuleIdRULE_HOST_DEVICE:       {RuleHostDevice, "use-device"},
	bpf.SharedRuleIdRULE_TERMINAL_OUTSIDE:  {RuleTerminalOutside, "use-terminal"},
	bpf.SharedRuleIdRULE_CONSOLE_EGRESS:    {RuleConsoleEgress, "write-console"},
}

// AllRules is the closed set of rules, field rules first.
var AllRules = func() []Rule {
	rs := []Rule{RuleNetwork, RuleWrite, RuleShellNone, RuleShellReadOnly, RuleTamper}
	for id := bpf.SharedRuleId(1); int(id) <= len(ruleTable); id++ {
		rs = append(rs, ruleTable[id].rule)
	}
	return rs
}()

// ruleShift is where a record's rule starts in its deny bit.
const ruleShift = uint32(bpf.SharedRuleLayoutRULE_SHIFT)

// ruleOf decodes the rule of a record's (or tally key's) hook and deny bit
// (with the rule id above ruleShift), and the operation it shows. Without
// a rule id the deny bit's field rule applies; a tamper record without one
// comes from an older program: the legacy hook's rule, or RuleTamper.
func ruleOf(h Hook, denyBit uint32) (Rule, string) {
	op := h.Operation()
	if id := bpf.SharedRuleId(denyBit >> ruleShift); id != bpf.SharedRuleIdRULE_FIELD {
		if r, ok := ruleTable[id]; ok {
			if r.operation != "" {
				op = r.operation
			}
			return r.rule, op
		}
		return Rule(fmt.Sprintf("rule(%d)", uint32(id))), op
	}
	switch denyBit & (1<<ruleShift - 1) {
	case denyNetwork:
		return RuleNetwork, op
	case denyWrite:
		return RuleWrite, op
	case denyShell:
		return RuleShellNone, op
	case denyShellWrite:
		return RuleShellReadOnly, op
	case denyTamper:
		if r := hookTable[h].rule; r != "" {
			for _, t := range ruleTable {
				if t.rule == r && t.operation != "" {
					op = t.operation
				}
			}
			return r, op
		}
		return RuleTamper, op
	}
	return "", op
}
