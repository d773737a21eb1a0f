package denial

// Names of the numbers a record's object holds (Object.String, and the
// structured fields of audit records). The numbers are the kernel's
// (include/uapi/linux/socket.h, capability.h, magic.h); enforcer's tests
// check them against golang.org/x/sys/unix and bpf2go's constants.

const afUnix = 1 // AF_UNIX

var familyNames = map[uint16]string{
	afUnix: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK",
	17: "AF_PACKET", 38: "AF_ALG", 40: "AF_VSOCK", 3: "AF_AX25",
	4: "AF_IPX", 5: "AF_APPLETALK", 29: "AF_CAN", 30: "AF_TIPC",
	31: "AF_BLUETOOTH", 41: "AF_KCM", 42: "AF_QIPCRTR",
	43: "AF_SMC", 44: "AF_XDP", 45: "AF_MCTP",
}

var capNames = map[uint64]string{
	2: "CAP_DAC_READ_SEARCH", 12: "CAP_NET_ADMIN", 25: "CAP_SYS_TIME",
	26: "CAP_SYS_TTY_CONFIG", 27: "CAP_MKNOD", 34: "CAP_SYSLOG",
	16: "CAP_SYS_MODULE", 17: "CAP_SYS_RAWIO", 21: "CAP_SYS_ADMIN",
	22: "CAP_SYS_BOOT", 32: "CAP_MAC_OVERRIDE", 33: "CAP_MAC_ADMIN",
	38: "CAP_PERFMON", 39: "CAP_BPF",
}

// fsNames names the kernel interface filesystems a write to which is
// refused (bpf/tamper.h kernel_fs_magic).
var fsNames = map[uint64]string{
	0x27e0eb:   "cgroup v1",          // CGROUP_SUPER_MAGIC
	0x9fa0:     "/proc/sys or sysrq", // PROC_SUPER_MAGIC
	0x62656572: "sysfs",              // SYSFS_MAGIC
	0x73636673: "securityfs",         // SECURITYFS_MAGIC
	0x64626720: "debugfs",            // DEBUGFS_MAGIC
	0x74726163: "tracefs",            // TRACEFS_MAGIC
	0x62656570: "configfs",           // CONFIGFS_MAGIC
	0xde5e81e4: "efivarfs",           // EFIVARFS_MAGIC
	0x6165676c: "pstore",             // PSTOREFS_MAGIC
	0x63677270: "cgroup2",            // CGROUP2_SUPER_MAGIC
}

var sockTypeNames = map[uint32]string{
	1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 5: "SOCK_SEQPACKET",
}

// FamilyName is the name of an address family ("AF_INET"), "" when this
// build does not name it.
func FamilyName(f uint16) string { return familyNames[f] }

// SockTypeName is the name of a socket type ("SOCK_STREAM"; flags such as
// SOCK_NONBLOCK ignored), "" when this build does not name it.
func SockTypeName(t uint32) string { return sockTypeNames[t&0xf] }

// CapabilityName is the name of a capability this build names
// ("CAP_SYS_ADMIN"), else "".
func CapabilityName(c uint64) string { return capNames[c] }

// FilesystemName names a kernel interface filesystem by its magic
// ("sysfs"), else "".
func FilesystemName(magic uint64) string { return fsNames[magic] }
