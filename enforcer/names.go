package enforcer

import (
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
)

// Names of the numbers a record's object holds (Object.String, and the
// structured fields of audit records).

var familyNames = map[uint16]string{
	unix.AF_UNIX: "AF_UNIX", unix.AF_INET: "AF_INET", unix.AF_INET6: "AF_INET6", unix.AF_NETLINK: "AF_NETLINK",
	unix.AF_PACKET: "AF_PACKET", unix.AF_ALG: "AF_ALG", unix.AF_VSOCK: "AF_VSOCK", unix.AF_AX25: "AF_AX25",
	unix.AF_IPX: "AF_IPX", unix.AF_APPLETALK: "AF_APPLETALK", unix.AF_CAN: "AF_CAN", unix.AF_TIPC: "AF_TIPC",
	unix.AF_BLUETOOTH: "AF_BLUETOOTH", unix.AF_KCM: "AF_KCM", unix.AF_QIPCRTR: "AF_QIPCRTR",
	unix.AF_SMC: "AF_SMC", unix.AF_XDP: "AF_XDP", unix.AF_MCTP: "AF_MCTP",
}

var capNames = map[uint64]string{
	unix.CAP_DAC_READ_SEARCH: "CAP_DAC_READ_SEARCH", unix.CAP_NET_ADMIN: "CAP_NET_ADMIN", unix.CAP_SYS_TIME: "CAP_SYS_TIME",
	unix.CAP_SYS_TTY_CONFIG: "CAP_SYS_TTY_CONFIG", unix.CAP_MKNOD: "CAP_MKNOD", unix.CAP_SYSLOG: "CAP_SYSLOG",
	unix.CAP_SYS_MODULE: "CAP_SYS_MODULE", unix.CAP_SYS_RAWIO: "CAP_SYS_RAWIO", unix.CAP_SYS_ADMIN: "CAP_SYS_ADMIN",
	unix.CAP_SYS_BOOT: "CAP_SYS_BOOT", unix.CAP_MAC_OVERRIDE: "CAP_MAC_OVERRIDE", unix.CAP_MAC_ADMIN: "CAP_MAC_ADMIN",
	unix.CAP_PERFMON: "CAP_PERFMON", unix.CAP_BPF: "CAP_BPF",
}

// fsNames names the kernel interface filesystems a write to which is
// refused (tamper.h kernel_fs_magic).
var fsNames = map[uint64]string{
	uint64(bpf.SharedFsMagicCGROUP_SUPER_MAGIC): "cgroup v1",
	uint64(bpf.SharedFsMagicPROC_SUPER_MAGIC):   "/proc/sys or sysrq",
	uint64(bpf.SharedFsMagicSYSFS_MAGIC):        "sysfs",
	uint64(bpf.SharedFsMagicSECURITYFS_MAGIC):   "securityfs",
	uint64(bpf.SharedFsMagicDEBUGFS_MAGIC):      "debugfs",
	uint64(bpf.SharedFsMagicTRACEFS_MAGIC):      "tracefs",
	uint64(bpf.SharedFsMagicCONFIGFS_MAGIC):     "configfs",
	uint64(bpf.SharedFsMagicEFIVARFS_MAGIC):     "efivarfs",
	uint64(bpf.SharedFsMagicPSTOREFS_MAGIC):     "pstore",
	uint64(bpf.SharedFsMagicCGROUP2SUPER_MAGIC): "cgroup2",
}

var sockTypeNames = map[uint32]string{
	unix.SOCK_STREAM: "SOCK_STREAM", unix.SOCK_DGRAM: "SOCK_DGRAM", unix.SOCK_RAW: "SOCK_RAW", unix.SOCK_SEQPACKET: "SOCK_SEQPACKET",
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
