package denial

import "fmt"

// Hook identifies the kernel hook that produced a denial. LSM hooks carry the
// kernel's own names (security_<name> in include/linux/lsm_hook_defs.h);
// cgroup-BPF hooks carry their attach type's section name. The values are
// enum hook_id of bpf/event.h, in its order (bpf/hooks_test.go checks them
// against the objects' BTF, enforcer's tests against bpf2go's constants). Every
// attached LSM program and cgroup-BPF program records its own hook's id
// (audit schema 3); the few ids older programs used for one protection
// across hooks (hookLegacy*) are still decoded, under the name of the hook
// that most often produced them.
type Hook uint16

// The hooks, in enum hook_id order.
const (
	HookSocketCreate          Hook = iota + 1 // HOOK_SOCKET_CREATE
	HookSocketBind                            // HOOK_SOCKET_BIND
	HookSocketConnect                         // HOOK_SOCKET_CONNECT
	HookSocketListen                          // HOOK_SOCKET_LISTEN
	HookSocketAccept                          // HOOK_SOCKET_ACCEPT
	HookSocketSendmsg                         // HOOK_SOCKET_SENDMSG
	HookSocketRecvmsg                         // HOOK_SOCKET_RECVMSG
	HookUnixStreamConnect                     // HOOK_UNIX_STREAM_CONNECT
	HookUnixMaySend                           // HOOK_UNIX_MAY_SEND
	HookFileOpen                              // HOOK_FILE_OPEN
	HookFilePermission                        // HOOK_FILE_PERMISSION
	HookFileTruncate                          // HOOK_FILE_TRUNCATE
	HookPathTruncate                          // HOOK_PATH_TRUNCATE
	HookMmapFile                              // HOOK_MMAP_FILE
	HookFileMprotect                          // HOOK_FILE_MPROTECT
	HookFileIoctl                             // HOOK_FILE_IOCTL
	HookInodeCreate                           // HOOK_INODE_CREATE
	HookInodeLink                             // HOOK_INODE_LINK
	HookInodeUnlink                           // HOOK_INODE_UNLINK
	HookInodeSymlink                          // HOOK_INODE_SYMLINK
	HookInodeMkdir                            // HOOK_INODE_MKDIR
	HookInodeRmdir                            // HOOK_INODE_RMDIR
	HookInodeMknod                            // HOOK_INODE_MKNOD
	HookInodeRename                           // HOOK_INODE_RENAME
	HookInodeSetattr                          // HOOK_INODE_SETATTR
	HookInodeSetxattr                         // HOOK_INODE_SETXATTR
	HookInodeRemovexattr                      // HOOK_INODE_REMOVEXATTR
	HookInodeSetACL                           // HOOK_INODE_SET_ACL
	HookInodeRemoveACL                        // HOOK_INODE_REMOVE_ACL
	HookCgroupSockCreate                      // HOOK_CGROUP_SOCK_CREATE
	HookCgroupConnect4                        // HOOK_CGROUP_CONNECT4
	HookCgroupConnect6                        // HOOK_CGROUP_CONNECT6
	HookCgroupSendmsg4                        // HOOK_CGROUP_SENDMSG4
	HookCgroupSendmsg6                        // HOOK_CGROUP_SENDMSG6
	HookBprmCheckSecurity                     // HOOK_BPRM_CHECK_SECURITY
	HookBPF                                   // HOOK_BPF
	HookPtraceAccessCheck                     // HOOK_PTRACE_ACCESS_CHECK
	HookTaskKill                              // HOOK_TASK_KILL
	HookInodePermission                       // HOOK_INODE_PERMISSION
	HookSbMount                               // HOOK_SB_MOUNT
	HookSbUmount                              // HOOK_SB_UMOUNT
	HookSbRemount                             // HOOK_SB_REMOUNT
	HookMoveMount                             // HOOK_MOVE_MOUNT
	HookSbPivotroot                           // HOOK_SB_PIVOTROOT
	hookLegacyTTYIoctl                        // HOOK_TTY_IOCTL
	hookLegacyBPFFSUnlink                     // HOOK_BPFFS_UNLINK
	HookPtraceTraceme                         // HOOK_PTRACE_TRACEME
	HookFileFcntl                             // HOOK_FILE_FCNTL
	HookCapable                               // HOOK_CAPABLE
	hookLegacyKernelSetting                   // HOOK_KERNEL_SETTING
	HookKernelModuleRequest                   // HOOK_KERNEL_MODULE_REQUEST
	HookTaskSetscheduler                      // HOOK_TASK_SETSCHEDULER
	hookLegacyProcWrite                       // HOOK_PROC_WRITE
	hookLegacyKmsgWrite                       // HOOK_KMSG_WRITE
	HookSocketGetsockopt                      // HOOK_SOCKET_GETSOCKOPT
	HookSocketSetsockopt                      // HOOK_SOCKET_SETSOCKOPT
	HookSocketShutdown                        // HOOK_SOCKET_SHUTDOWN
	HookFileIoctlCompat                       // HOOK_FILE_IOCTL_COMPAT
	HookUringCmd                              // HOOK_URING_CMD
	HookIPCPermission                         // HOOK_IPC_PERMISSION
	HookShmShmat                              // HOOK_SHM_SHMAT
	HookShmAssociate                          // HOOK_SHM_ASSOCIATE
	HookKeyAlloc                              // HOOK_KEY_ALLOC
	HookKeyPermission                         // HOOK_KEY_PERMISSION
	HookTaskSetrlimit                         // HOOK_TASK_SETRLIMIT
	HookTaskSetnice                           // HOOK_TASK_SETNICE
	HookTaskSetioprio                         // HOOK_TASK_SETIOPRIO
	HookTaskPrlimit                           // HOOK_TASK_PRLIMIT
	HookFileSendSigiotask                     // HOOK_FILE_SEND_SIGIOTASK
	HookShmShmctl                             // HOOK_SHM_SHMCTL
	HookMsgQueueMsgctl                        // HOOK_MSG_QUEUE_MSGCTL
	HookSemSemctl                             // HOOK_SEM_SEMCTL
	HookMsgQueueAssociate                     // HOOK_MSG_QUEUE_ASSOCIATE
	HookSemAssociate                          // HOOK_SEM_ASSOCIATE
	HookShmAllocSecurity                      // HOOK_SHM_ALLOC_SECURITY
	HookMsgQueueAllocSecurity                 // HOOK_MSG_QUEUE_ALLOC_SECURITY
	HookSemAllocSecurity                      // HOOK_SEM_ALLOC_SECURITY
	HookBprmCommittedCreds                    // HOOK_BPRM_COMMITTED_CREDS
	HookTaskAlloc                             // HOOK_TASK_ALLOC
	HookShmFreeSecurity                       // HOOK_SHM_FREE_SECURITY
	HookMsgQueueFreeSecurity                  // HOOK_MSG_QUEUE_FREE_SECURITY
	HookSemFreeSecurity                       // HOOK_SEM_FREE_SECURITY
	HookKeyFree                               // HOOK_KEY_FREE
	HookInodeAllocSecurity                    // HOOK_INODE_ALLOC_SECURITY
	HookFileLock                              // HOOK_FILE_LOCK
	HookTaskPrctl                             // HOOK_TASK_PRCTL
	HookDInstantiate                          // HOOK_D_INSTANTIATE
	HookInodeFreeSecurity                     // HOOK_INODE_FREE_SECURITY
	HookFileReceive                           // HOOK_FILE_RECEIVE
	HookTaskSetpgid                           // HOOK_TASK_SETPGID
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
	HookFileReceive:           {name: "file_receive", operation: "receive-descriptor"},
	HookTaskSetpgid:           {name: "task_setpgid", operation: "join-process-group"},
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

// LegacyRule is the protection a legacy id (Legacy) stood for: its
// records carry no rule of their own. "" for every other hook.
func (h Hook) LegacyRule() Rule { return hookTable[h].rule }
