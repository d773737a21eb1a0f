package enforcer

import "fmt"

// Hook identifies the kernel hook that produced a denial. LSM hooks carry the
// kernel's own names (security_<name> in include/linux/lsm_hook_defs.h);
// cgroup-BPF hooks carry their attach type's section name. Values mirror
// enum hook_id in bpf/enforcerd.h.
type Hook uint16

// The hooks, in bpf/enforcerd.h order.
const (
	HookSocketCreate Hook = iota + 1
	HookSocketBind
	HookSocketConnect
	HookSocketListen
	HookSocketAccept
	HookSocketSendmsg
	HookSocketRecvmsg
	HookUnixStreamConnect
	HookUnixMaySend
	HookFileOpen
	HookFilePermission
	HookFileTruncate
	HookPathTruncate
	HookMmapFile
	HookFileMprotect
	HookFileIoctl
	HookInodeCreate
	HookInodeLink
	HookInodeUnlink
	HookInodeSymlink
	HookInodeMkdir
	HookInodeRmdir
	HookInodeMknod
	HookInodeRename
	HookInodeSetattr
	HookInodeSetxattr
	HookInodeRemovexattr
	HookInodeSetACL
	HookInodeRemoveACL
	HookCgroupSockCreate
	HookCgroupConnect4
	HookCgroupConnect6
	HookCgroupSendmsg4
	HookCgroupSendmsg6
	HookBprmCheckSecurity
	HookBPF
	HookPtraceAccessCheck
	HookTaskKill
	HookInodePermission
	HookSbMount
	HookSbUmount
	HookSbRemount
	HookMoveMount
	HookSbPivotroot
	HookTTYIoctl
	HookBPFFSUnlink
	HookPtraceTraceme
	HookFileFcntl
	HookCapable
	HookKernelSetting
	HookKernelModuleRequest
	HookTaskSetsched
	HookProcWrite
	HookKmsgWrite
	HookSocketGetsockopt
	HookSocketSetsockopt
	HookSocketShutdown
	HookFileIoctlCompat
	HookUringCmd
	HookIPCPermission
	HookShmShmat
	HookIPCAssociate
	HookKeyAlloc
	HookKeyPermission
	HookTaskSetrlimit
)

type hookInfo struct {
	name      string // kernel hook / attach name
	operation string // what the process tried, for humans and the audit log
}

var hookTable = map[Hook]hookInfo{
	HookSocketCreate:        {"socket_create", "socket"},
	HookSocketBind:          {"socket_bind", "bind"},
	HookSocketConnect:       {"socket_connect", "connect"},
	HookSocketListen:        {"socket_listen", "listen"},
	HookSocketAccept:        {"socket_accept", "accept"},
	HookSocketSendmsg:       {"socket_sendmsg", "send"},
	HookSocketRecvmsg:       {"socket_recvmsg", "receive"},
	HookUnixStreamConnect:   {"unix_stream_connect", "connect"},
	HookUnixMaySend:         {"unix_may_send", "send"},
	HookFileOpen:            {"file_open", "open-for-write"},
	HookFilePermission:      {"file_permission", "write"},
	HookFileTruncate:        {"file_truncate", "truncate"},
	HookPathTruncate:        {"path_truncate", "truncate"},
	HookMmapFile:            {"mmap_file", "mmap-shared-write"},
	HookFileMprotect:        {"file_mprotect", "mprotect-shared-write"},
	HookFileIoctl:           {"file_ioctl", "ioctl"},
	HookInodeCreate:         {"inode_create", "create"},
	HookInodeLink:           {"inode_link", "link"},
	HookInodeUnlink:         {"inode_unlink", "unlink"},
	HookInodeSymlink:        {"inode_symlink", "symlink"},
	HookInodeMkdir:          {"inode_mkdir", "mkdir"},
	HookInodeRmdir:          {"inode_rmdir", "rmdir"},
	HookInodeMknod:          {"inode_mknod", "mknod"},
	HookInodeRename:         {"inode_rename", "rename"},
	HookInodeSetattr:        {"inode_setattr", "setattr"},
	HookInodeSetxattr:       {"inode_setxattr", "setxattr"},
	HookInodeRemovexattr:    {"inode_removexattr", "removexattr"},
	HookInodeSetACL:         {"inode_set_acl", "set-acl"},
	HookInodeRemoveACL:      {"inode_remove_acl", "remove-acl"},
	HookCgroupSockCreate:    {"cgroup/sock_create", "socket"},
	HookCgroupConnect4:      {"cgroup/connect4", "connect"},
	HookCgroupConnect6:      {"cgroup/connect6", "connect"},
	HookCgroupSendmsg4:      {"cgroup/sendmsg4", "send"},
	HookCgroupSendmsg6:      {"cgroup/sendmsg6", "send"},
	HookBprmCheckSecurity:   {"bprm_check_security", "exec"},
	HookBPF:                 {"bpf", "bpf"},
	HookPtraceAccessCheck:   {"ptrace_access_check", "ptrace"},
	HookTaskKill:            {"task_kill", "signal"},
	HookInodePermission:     {"inode_permission", "write-outside-cgroup"},
	HookSbMount:             {"sb_mount", "mount"},
	HookSbUmount:            {"sb_umount", "umount"},
	HookSbRemount:           {"sb_remount", "remount"},
	HookMoveMount:           {"move_mount", "move-mount"},
	HookSbPivotroot:         {"sb_pivotroot", "pivot-root"},
	HookTTYIoctl:            {"file_ioctl", "tty-inject"},
	HookBPFFSUnlink:         {"inode_unlink", "remove-pin"},
	HookPtraceTraceme:       {"ptrace_traceme", "ptrace-traceme"},
	HookFileFcntl:           {"file_fcntl", "set-signal-owner"},
	HookCapable:             {"capable", "use-capability"},
	HookKernelSetting:       {"inode_permission", "write-kernel-setting"},
	HookKernelModuleRequest: {"kernel_module_request", "load-kernel-module"},
	HookTaskSetsched:        {"task_setscheduler", "change-process-limits"},
	HookProcWrite:           {"inode_permission", "write-process-state"},
	HookKmsgWrite:           {"file_permission", "write-kernel-log"},
	HookSocketGetsockopt:    {"socket_getsockopt", "getsockopt"},
	HookSocketSetsockopt:    {"socket_setsockopt", "setsockopt"},
	HookSocketShutdown:      {"socket_shutdown", "shutdown"},
	HookFileIoctlCompat:     {"file_ioctl_compat", "ioctl"},
	HookUringCmd:            {"uring_cmd", "io-uring-passthrough"},
	HookIPCPermission:       {"ipc_permission", "use-ipc-object"},
	HookShmShmat:            {"shm_shmat", "attach-shared-memory"},
	HookIPCAssociate:        {"shm_associate", "open-ipc-object"},
	HookKeyAlloc:            {"key_alloc", "create-key"},
	HookKeyPermission:       {"key_permission", "use-key"},
	HookTaskSetrlimit:       {"task_setrlimit", "change-resource-limit"},
}

// AllHooks lists every hook, for exhaustiveness tests and metrics.
var AllHooks = func() []Hook {
	hs := make([]Hook, 0, len(hookTable))
	for h := Hook(1); int(h) <= len(hookTable); h++ {
		hs = append(hs, h)
	}
	return hs
}()

// String is the kernel's name of the hook ("file_open", "cgroup/connect4").
func (h Hook) String() string {
	if i, ok := hookTable[h]; ok {
		return i.name
	}
	return fmt.Sprintf("hook(%d)", uint16(h))
}

// Operation is what the denied process tried ("create", "connect", ...).
func (h Hook) Operation() string {
	if i, ok := hookTable[h]; ok {
		return i.operation
	}
	return "unknown"
}
