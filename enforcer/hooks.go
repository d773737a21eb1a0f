package enforcer

import (
	"fmt"

	"github.com/enforcerd/enforcerd/bpf"
)

// Hook identifies the kernel hook that produced a denial. LSM hooks carry the
// kernel's own names (security_<name> in include/linux/lsm_hook_defs.h);
// cgroup-BPF hooks carry their attach type's section name. The values are
// enum hook_id of bpf/event.h, through bpf2go (bpf.SharedHookId).
type Hook uint16

// The hooks, in enum hook_id order.
const (
	HookSocketCreate        = Hook(bpf.SharedHookIdHOOK_SOCKET_CREATE)
	HookSocketBind          = Hook(bpf.SharedHookIdHOOK_SOCKET_BIND)
	HookSocketConnect       = Hook(bpf.SharedHookIdHOOK_SOCKET_CONNECT)
	HookSocketListen        = Hook(bpf.SharedHookIdHOOK_SOCKET_LISTEN)
	HookSocketAccept        = Hook(bpf.SharedHookIdHOOK_SOCKET_ACCEPT)
	HookSocketSendmsg       = Hook(bpf.SharedHookIdHOOK_SOCKET_SENDMSG)
	HookSocketRecvmsg       = Hook(bpf.SharedHookIdHOOK_SOCKET_RECVMSG)
	HookUnixStreamConnect   = Hook(bpf.SharedHookIdHOOK_UNIX_STREAM_CONNECT)
	HookUnixMaySend         = Hook(bpf.SharedHookIdHOOK_UNIX_MAY_SEND)
	HookFileOpen            = Hook(bpf.SharedHookIdHOOK_FILE_OPEN)
	HookFilePermission      = Hook(bpf.SharedHookIdHOOK_FILE_PERMISSION)
	HookFileTruncate        = Hook(bpf.SharedHookIdHOOK_FILE_TRUNCATE)
	HookPathTruncate        = Hook(bpf.SharedHookIdHOOK_PATH_TRUNCATE)
	HookMmapFile            = Hook(bpf.SharedHookIdHOOK_MMAP_FILE)
	HookFileMprotect        = Hook(bpf.SharedHookIdHOOK_FILE_MPROTECT)
	HookFileIoctl           = Hook(bpf.SharedHookIdHOOK_FILE_IOCTL)
	HookInodeCreate         = Hook(bpf.SharedHookIdHOOK_INODE_CREATE)
	HookInodeLink           = Hook(bpf.SharedHookIdHOOK_INODE_LINK)
	HookInodeUnlink         = Hook(bpf.SharedHookIdHOOK_INODE_UNLINK)
	HookInodeSymlink        = Hook(bpf.SharedHookIdHOOK_INODE_SYMLINK)
	HookInodeMkdir          = Hook(bpf.SharedHookIdHOOK_INODE_MKDIR)
	HookInodeRmdir          = Hook(bpf.SharedHookIdHOOK_INODE_RMDIR)
	HookInodeMknod          = Hook(bpf.SharedHookIdHOOK_INODE_MKNOD)
	HookInodeRename         = Hook(bpf.SharedHookIdHOOK_INODE_RENAME)
	HookInodeSetattr        = Hook(bpf.SharedHookIdHOOK_INODE_SETATTR)
	HookInodeSetxattr       = Hook(bpf.SharedHookIdHOOK_INODE_SETXATTR)
	HookInodeRemovexattr    = Hook(bpf.SharedHookIdHOOK_INODE_REMOVEXATTR)
	HookInodeSetACL         = Hook(bpf.SharedHookIdHOOK_INODE_SET_ACL)
	HookInodeRemoveACL      = Hook(bpf.SharedHookIdHOOK_INODE_REMOVE_ACL)
	HookCgroupSockCreate    = Hook(bpf.SharedHookIdHOOK_CGROUP_SOCK_CREATE)
	HookCgroupConnect4      = Hook(bpf.SharedHookIdHOOK_CGROUP_CONNECT4)
	HookCgroupConnect6      = Hook(bpf.SharedHookIdHOOK_CGROUP_CONNECT6)
	HookCgroupSendmsg4      = Hook(bpf.SharedHookIdHOOK_CGROUP_SENDMSG4)
	HookCgroupSendmsg6      = Hook(bpf.SharedHookIdHOOK_CGROUP_SENDMSG6)
	HookBprmCheckSecurity   = Hook(bpf.SharedHookIdHOOK_BPRM_CHECK_SECURITY)
	HookBPF                 = Hook(bpf.SharedHookIdHOOK_BPF)
	HookPtraceAccessCheck   = Hook(bpf.SharedHookIdHOOK_PTRACE_ACCESS_CHECK)
	HookTaskKill            = Hook(bpf.SharedHookIdHOOK_TASK_KILL)
	HookInodePermission     = Hook(bpf.SharedHookIdHOOK_INODE_PERMISSION)
	HookSbMount             = Hook(bpf.SharedHookIdHOOK_SB_MOUNT)
	HookSbUmount            = Hook(bpf.SharedHookIdHOOK_SB_UMOUNT)
	HookSbRemount           = Hook(bpf.SharedHookIdHOOK_SB_REMOUNT)
	HookMoveMount           = Hook(bpf.SharedHookIdHOOK_MOVE_MOUNT)
	HookSbPivotroot         = Hook(bpf.SharedHookIdHOOK_SB_PIVOTROOT)
	HookTTYIoctl            = Hook(bpf.SharedHookIdHOOK_TTY_IOCTL)
	HookBPFFSUnlink         = Hook(bpf.SharedHookIdHOOK_BPFFS_UNLINK)
	HookPtraceTraceme       = Hook(bpf.SharedHookIdHOOK_PTRACE_TRACEME)
	HookFileFcntl           = Hook(bpf.SharedHookIdHOOK_FILE_FCNTL)
	HookCapable             = Hook(bpf.SharedHookIdHOOK_CAPABLE)
	HookKernelSetting       = Hook(bpf.SharedHookIdHOOK_KERNEL_SETTING)
	HookKernelModuleRequest = Hook(bpf.SharedHookIdHOOK_KERNEL_MODULE_REQUEST)
	HookTaskSetsched        = Hook(bpf.SharedHookIdHOOK_TASK_SETSCHED)
	HookProcWrite           = Hook(bpf.SharedHookIdHOOK_PROC_WRITE)
	HookKmsgWrite           = Hook(bpf.SharedHookIdHOOK_KMSG_WRITE)
	HookSocketGetsockopt    = Hook(bpf.SharedHookIdHOOK_SOCKET_GETSOCKOPT)
	HookSocketSetsockopt    = Hook(bpf.SharedHookIdHOOK_SOCKET_SETSOCKOPT)
	HookSocketShutdown      = Hook(bpf.SharedHookIdHOOK_SOCKET_SHUTDOWN)
	HookFileIoctlCompat     = Hook(bpf.SharedHookIdHOOK_FILE_IOCTL_COMPAT)
	HookUringCmd            = Hook(bpf.SharedHookIdHOOK_URING_CMD)
	HookIPCPermission       = Hook(bpf.SharedHookIdHOOK_IPC_PERMISSION)
	HookShmShmat            = Hook(bpf.SharedHookIdHOOK_SHM_SHMAT)
	HookIPCAssociate        = Hook(bpf.SharedHookIdHOOK_IPC_ASSOCIATE)
	HookKeyAlloc            = Hook(bpf.SharedHookIdHOOK_KEY_ALLOC)
	HookKeyPermission       = Hook(bpf.SharedHookIdHOOK_KEY_PERMISSION)
	HookTaskSetrlimit       = Hook(bpf.SharedHookIdHOOK_TASK_SETRLIMIT)
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

// AllHooks lists every hook, for exhaustiveness tests and metrics
// (bpf/hooks_test.go checks it against enum hook_id in the objects' BTF).
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
