package enforcer

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
)

// TestLeafNumbersMatchBPF: the numbers the leaf packages (denial, entry)
// spell out without importing bpf are bpf2go's constants of the compiled
// objects: hook ids, object kinds, limits, filesystem magics.
func TestLeafNumbersMatchBPF(t *testing.T) {
	for _, c := range []struct {
		got  denial.Hook
		want bpf.SharedHookId
	}{
		{denial.HookSocketCreate, bpf.SharedHookIdHOOK_SOCKET_CREATE},
		{denial.HookSocketBind, bpf.SharedHookIdHOOK_SOCKET_BIND},
		{denial.HookSocketConnect, bpf.SharedHookIdHOOK_SOCKET_CONNECT},
		{denial.HookSocketListen, bpf.SharedHookIdHOOK_SOCKET_LISTEN},
		{denial.HookSocketAccept, bpf.SharedHookIdHOOK_SOCKET_ACCEPT},
		{denial.HookSocketSendmsg, bpf.SharedHookIdHOOK_SOCKET_SENDMSG},
		{denial.HookSocketRecvmsg, bpf.SharedHookIdHOOK_SOCKET_RECVMSG},
		{denial.HookUnixStreamConnect, bpf.SharedHookIdHOOK_UNIX_STREAM_CONNECT},
		{denial.HookUnixMaySend, bpf.SharedHookIdHOOK_UNIX_MAY_SEND},
		{denial.HookFileOpen, bpf.SharedHookIdHOOK_FILE_OPEN},
		{denial.HookFilePermission, bpf.SharedHookIdHOOK_FILE_PERMISSION},
		{denial.HookFileTruncate, bpf.SharedHookIdHOOK_FILE_TRUNCATE},
		{denial.HookPathTruncate, bpf.SharedHookIdHOOK_PATH_TRUNCATE},
		{denial.HookMmapFile, bpf.SharedHookIdHOOK_MMAP_FILE},
		{denial.HookFileMprotect, bpf.SharedHookIdHOOK_FILE_MPROTECT},
		{denial.HookFileIoctl, bpf.SharedHookIdHOOK_FILE_IOCTL},
		{denial.HookInodeCreate, bpf.SharedHookIdHOOK_INODE_CREATE},
		{denial.HookInodeLink, bpf.SharedHookIdHOOK_INODE_LINK},
		{denial.HookInodeUnlink, bpf.SharedHookIdHOOK_INODE_UNLINK},
		{denial.HookInodeSymlink, bpf.SharedHookIdHOOK_INODE_SYMLINK},
		{denial.HookInodeMkdir, bpf.SharedHookIdHOOK_INODE_MKDIR},
		{denial.HookInodeRmdir, bpf.SharedHookIdHOOK_INODE_RMDIR},
		{denial.HookInodeMknod, bpf.SharedHookIdHOOK_INODE_MKNOD},
		{denial.HookInodeRename, bpf.SharedHookIdHOOK_INODE_RENAME},
		{denial.HookInodeSetattr, bpf.SharedHookIdHOOK_INODE_SETATTR},
		{denial.HookInodeSetxattr, bpf.SharedHookIdHOOK_INODE_SETXATTR},
		{denial.HookInodeRemovexattr, bpf.SharedHookIdHOOK_INODE_REMOVEXATTR},
		{denial.HookInodeSetACL, bpf.SharedHookIdHOOK_INODE_SET_ACL},
		{denial.HookInodeRemoveACL, bpf.SharedHookIdHOOK_INODE_REMOVE_ACL},
		{denial.HookCgroupSockCreate, bpf.SharedHookIdHOOK_CGROUP_SOCK_CREATE},
		{denial.HookCgroupConnect4, bpf.SharedHookIdHOOK_CGROUP_CONNECT4},
		{denial.HookCgroupConnect6, bpf.SharedHookIdHOOK_CGROUP_CONNECT6},
		{denial.HookCgroupSendmsg4, bpf.SharedHookIdHOOK_CGROUP_SENDMSG4},
		{denial.HookCgroupSendmsg6, bpf.SharedHookIdHOOK_CGROUP_SENDMSG6},
		{denial.HookBprmCheckSecurity, bpf.SharedHookIdHOOK_BPRM_CHECK_SECURITY},
		{denial.HookBPF, bpf.SharedHookIdHOOK_BPF},
		{denial.HookPtraceAccessCheck, bpf.SharedHookIdHOOK_PTRACE_ACCESS_CHECK},
		{denial.HookTaskKill, bpf.SharedHookIdHOOK_TASK_KILL},
		{denial.HookInodePermission, bpf.SharedHookIdHOOK_INODE_PERMISSION},
		{denial.HookSbMount, bpf.SharedHookIdHOOK_SB_MOUNT},
		{denial.HookSbUmount, bpf.SharedHookIdHOOK_SB_UMOUNT},
		{denial.HookSbRemount, bpf.SharedHookIdHOOK_SB_REMOUNT},
		{denial.HookMoveMount, bpf.SharedHookIdHOOK_MOVE_MOUNT},
		{denial.HookSbPivotroot, bpf.SharedHookIdHOOK_SB_PIVOTROOT},
		{denial.Hook(bpf.SharedHookIdHOOK_TTY_IOCTL), bpf.SharedHookIdHOOK_TTY_IOCTL},
		{denial.Hook(bpf.SharedHookIdHOOK_BPFFS_UNLINK), bpf.SharedHookIdHOOK_BPFFS_UNLINK},
		{denial.HookPtraceTraceme, bpf.SharedHookIdHOOK_PTRACE_TRACEME},
		{denial.HookFileFcntl, bpf.SharedHookIdHOOK_FILE_FCNTL},
		{denial.HookCapable, bpf.SharedHookIdHOOK_CAPABLE},
		{denial.Hook(bpf.SharedHookIdHOOK_KERNEL_SETTING), bpf.SharedHookIdHOOK_KERNEL_SETTING},
		{denial.HookKernelModuleRequest, bpf.SharedHookIdHOOK_KERNEL_MODULE_REQUEST},
		{denial.HookTaskSetscheduler, bpf.SharedHookIdHOOK_TASK_SETSCHEDULER},
		{denial.Hook(bpf.SharedHookIdHOOK_PROC_WRITE), bpf.SharedHookIdHOOK_PROC_WRITE},
		{denial.Hook(bpf.SharedHookIdHOOK_KMSG_WRITE), bpf.SharedHookIdHOOK_KMSG_WRITE},
		{denial.HookSocketGetsockopt, bpf.SharedHookIdHOOK_SOCKET_GETSOCKOPT},
		{denial.HookSocketSetsockopt, bpf.SharedHookIdHOOK_SOCKET_SETSOCKOPT},
		{denial.HookSocketShutdown, bpf.SharedHookIdHOOK_SOCKET_SHUTDOWN},
		{denial.HookFileIoctlCompat, bpf.SharedHookIdHOOK_FILE_IOCTL_COMPAT},
		{denial.HookUringCmd, bpf.SharedHookIdHOOK_URING_CMD},
		{denial.HookIPCPermission, bpf.SharedHookIdHOOK_IPC_PERMISSION},
		{denial.HookShmShmat, bpf.SharedHookIdHOOK_SHM_SHMAT},
		{denial.HookShmAssociate, bpf.SharedHookIdHOOK_SHM_ASSOCIATE},
		{denial.HookKeyAlloc, bpf.SharedHookIdHOOK_KEY_ALLOC},
		{denial.HookKeyPermission, bpf.SharedHookIdHOOK_KEY_PERMISSION},
		{denial.HookTaskSetrlimit, bpf.SharedHookIdHOOK_TASK_SETRLIMIT},
		{denial.HookTaskSetnice, bpf.SharedHookIdHOOK_TASK_SETNICE},
		{denial.HookTaskSetioprio, bpf.SharedHookIdHOOK_TASK_SETIOPRIO},
		{denial.HookTaskPrlimit, bpf.SharedHookIdHOOK_TASK_PRLIMIT},
		{denial.HookFileSendSigiotask, bpf.SharedHookIdHOOK_FILE_SEND_SIGIOTASK},
		{denial.HookShmShmctl, bpf.SharedHookIdHOOK_SHM_SHMCTL},
		{denial.HookMsgQueueMsgctl, bpf.SharedHookIdHOOK_MSG_QUEUE_MSGCTL},
		{denial.HookSemSemctl, bpf.SharedHookIdHOOK_SEM_SEMCTL},
		{denial.HookMsgQueueAssociate, bpf.SharedHookIdHOOK_MSG_QUEUE_ASSOCIATE},
		{denial.HookSemAssociate, bpf.SharedHookIdHOOK_SEM_ASSOCIATE},
		{denial.HookShmAllocSecurity, bpf.SharedHookIdHOOK_SHM_ALLOC_SECURITY},
		{denial.HookMsgQueueAllocSecurity, bpf.SharedHookIdHOOK_MSG_QUEUE_ALLOC_SECURITY},
		{denial.HookSemAllocSecurity, bpf.SharedHookIdHOOK_SEM_ALLOC_SECURITY},
		{denial.HookBprmCommittedCreds, bpf.SharedHookIdHOOK_BPRM_COMMITTED_CREDS},
		{denial.HookTaskAlloc, bpf.SharedHookIdHOOK_TASK_ALLOC},
		{denial.HookShmFreeSecurity, bpf.SharedHookIdHOOK_SHM_FREE_SECURITY},
		{denial.HookMsgQueueFreeSecurity, bpf.SharedHookIdHOOK_MSG_QUEUE_FREE_SECURITY},
		{denial.HookSemFreeSecurity, bpf.SharedHookIdHOOK_SEM_FREE_SECURITY},
		{denial.HookKeyFree, bpf.SharedHookIdHOOK_KEY_FREE},
		{denial.HookInodeAllocSecurity, bpf.SharedHookIdHOOK_INODE_ALLOC_SECURITY},
		{denial.HookFileLock, bpf.SharedHookIdHOOK_FILE_LOCK},
		{denial.HookTaskPrctl, bpf.SharedHookIdHOOK_TASK_PRCTL},
		{denial.HookDInstantiate, bpf.SharedHookIdHOOK_D_INSTANTIATE},
		{denial.HookInodeFreeSecurity, bpf.SharedHookIdHOOK_INODE_FREE_SECURITY},
		{denial.HookFileReceive, bpf.SharedHookIdHOOK_FILE_RECEIVE},
		{denial.HookTaskSetpgid, bpf.SharedHookIdHOOK_TASK_SETPGID},
	} {
		if uint64(c.got) != uint64(c.want) {
			t.Errorf("hook %s is %d, enum hook_id says %d", c.got, c.got, c.want)
		}
	}
	if len(denial.AllHooks) != 90 {
		t.Errorf("denial.AllHooks has %d hooks, enum hook_id 90", len(denial.AllHooks))
	}
	for _, c := range []struct {
		got  denial.ObjectKind
		want bpf.SharedObjectKind
	}{
		{denial.ObjectNone, bpf.SharedObjectKindOBJ_NONE},
		{denial.ObjectFile, bpf.SharedObjectKindOBJ_FILE},
		{denial.ObjectSocket, bpf.SharedObjectKindOBJ_SOCKET},
		{denial.ObjectTask, bpf.SharedObjectKindOBJ_TASK},
		{denial.ObjectCgroup, bpf.SharedObjectKindOBJ_CGROUP},
		{denial.ObjectBPFCmd, bpf.SharedObjectKindOBJ_BPF_CMD},
		{denial.ObjectMount, bpf.SharedObjectKindOBJ_MOUNT},
		{denial.ObjectCap, bpf.SharedObjectKindOBJ_CAPABILITY},
		{denial.ObjectFS, bpf.SharedObjectKindOBJ_FSMAGIC},
	} {
		if uint64(c.got) != uint64(c.want) {
			t.Errorf("object kind %d, enum object_kind says %d", c.got, c.want)
		}
	}
	for _, c := range []struct{ got, want int }{
		{entry.MaxWriteRoots, int(bpf.SharedLimitsMAX_WRITE_ROOTS)},
		{entry.MaxEndpoints, int(bpf.SharedEndpointLimitsMAX_ENDPOINTS)},
	} {
		if c.got != c.want {
			t.Errorf("limit %d, bpf says %d", c.got, c.want)
		}
	}
	for _, c := range []struct {
		magic bpf.SharedFsMagic
		name  string
	}{
		{bpf.SharedFsMagicCGROUP_SUPER_MAGIC, "cgroup v1"},
		{bpf.SharedFsMagicPROC_SUPER_MAGIC, "/proc/sys or sysrq"},
		{bpf.SharedFsMagicSYSFS_MAGIC, "sysfs"},
		{bpf.SharedFsMagicSECURITYFS_MAGIC, "securityfs"},
		{bpf.SharedFsMagicDEBUGFS_MAGIC, "debugfs"},
		{bpf.SharedFsMagicTRACEFS_MAGIC, "tracefs"},
		{bpf.SharedFsMagicCONFIGFS_MAGIC, "configfs"},
		{bpf.SharedFsMagicEFIVARFS_MAGIC, "efivarfs"},
		{bpf.SharedFsMagicPSTOREFS_MAGIC, "pstore"},
		{bpf.SharedFsMagicCGROUP2SUPER_MAGIC, "cgroup2"},
	} {
		if got := denial.FilesystemName(uint64(c.magic)); got != c.name {
			t.Errorf("filesystem %#x: %q, want %q", uint64(c.magic), got, c.name)
		}
	}
}

// TestDenialNamesMatchKernel: the address families, capabilities and
// socket types denial names are the kernel's numbers (x/sys/unix).
func TestDenialNamesMatchKernel(t *testing.T) {
	for n, v := range map[string]int{
		"AF_UNIX":      unix.AF_UNIX,
		"AF_INET":      unix.AF_INET,
		"AF_INET6":     unix.AF_INET6,
		"AF_NETLINK":   unix.AF_NETLINK,
		"AF_PACKET":    unix.AF_PACKET,
		"AF_ALG":       unix.AF_ALG,
		"AF_VSOCK":     unix.AF_VSOCK,
		"AF_AX25":      unix.AF_AX25,
		"AF_IPX":       unix.AF_IPX,
		"AF_APPLETALK": unix.AF_APPLETALK,
		"AF_CAN":       unix.AF_CAN,
		"AF_TIPC":      unix.AF_TIPC,
		"AF_BLUETOOTH": unix.AF_BLUETOOTH,
		"AF_KCM":       unix.AF_KCM,
		"AF_QIPCRTR":   unix.AF_QIPCRTR,
		"AF_SMC":       unix.AF_SMC,
		"AF_XDP":       unix.AF_XDP,
		"AF_MCTP":      unix.AF_MCTP,
	} {
		if got := denial.FamilyName(uint16(v)); got != n {
			t.Errorf("family %d: %q, want %q", v, got, n)
		}
	}
	for n, v := range map[string]int{
		"CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
		"CAP_NET_ADMIN":       unix.CAP_NET_ADMIN,
		"CAP_SYS_TIME":        unix.CAP_SYS_TIME,
		"CAP_SYS_TTY_CONFIG":  unix.CAP_SYS_TTY_CONFIG,
		"CAP_MKNOD":           unix.CAP_MKNOD,
		"CAP_SYSLOG":          unix.CAP_SYSLOG,
		"CAP_SYS_MODULE":      unix.CAP_SYS_MODULE,
		"CAP_SYS_RAWIO":       unix.CAP_SYS_RAWIO,
		"CAP_SYS_ADMIN":       unix.CAP_SYS_ADMIN,
		"CAP_SYS_BOOT":        unix.CAP_SYS_BOOT,
		"CAP_MAC_OVERRIDE":    unix.CAP_MAC_OVERRIDE,
		"CAP_MAC_ADMIN":       unix.CAP_MAC_ADMIN,
		"CAP_PERFMON":         unix.CAP_PERFMON,
		"CAP_BPF":             unix.CAP_BPF,
	} {
		if got := denial.CapabilityName(uint64(v)); got != n {
			t.Errorf("capability %d: %q, want %q", v, got, n)
		}
	}
	for n, v := range map[string]int{
		"SOCK_STREAM":    unix.SOCK_STREAM,
		"SOCK_DGRAM":     unix.SOCK_DGRAM,
		"SOCK_RAW":       unix.SOCK_RAW,
		"SOCK_SEQPACKET": unix.SOCK_SEQPACKET,
	} {
		if got := denial.SockTypeName(uint32(v)); got != n {
			t.Errorf("socket type %d: %q, want %q", v, got, n)
		}
	}
}
