/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel constants the programs compare against: they are macros in the
 * kernel's headers, which BTF (vmlinux.h) does not carry. Each is stated
 * here once, next to the header it comes from; constants the kernel keeps
 * in enums (PIDTYPE_PID, MNT_INTERNAL, BPF_*) come from vmlinux.h instead.
 *
 * The filesystem magics are an enum so that user space names them from the
 * same values (bpf2go -type fs_magic, enforcer's denial records).
 */
#ifndef ENFORCERD_CONSTS_H
#define ENFORCERD_CONSTS_H

/* ---- errno (include/uapi/asm-generic/errno-base.h) ---- */
#define EPERM 1
#define ENOMEM 12
#define E2BIG 7
#define EACCES 13

/* ---- address families (include/linux/socket.h) ---- */
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10

/* ---- file types (include/uapi/linux/stat.h) ---- */
#define S_IFMT 00170000
#define S_ISUID 0004000
#define S_ISGID 0002000
#define S_IFSOCK 0140000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000
#define S_IFCHR 0020000
#define S_IFIFO 0010000

/* ---- open and access modes (include/linux/fs.h, asm-generic/fcntl.h) ---- */
#define FMODE_WRITE 0x2
#define FMODE_EXEC 0x20	      /* f_mode; __FMODE_EXEC in f_flags is the same bit */
#define FMODE_NOACCOUNT 0x20000000 /* a kernel-internal file opened on behalf of
				    * another open (overlayfs, cachefiles and
				    * FUSE passthrough backing files) */
#define MAY_WRITE 0x2
#define MAY_READ 0x4
#define MAY_APPEND 0x8
#define O_TRUNC 00001000
#define FASYNC 020000

/* ---- fcntl commands (include/uapi/asm-generic/fcntl.h) ---- */
#define F_SETFL 4
#define F_SETOWN 8
#define F_SETSIG 10
#define F_SETOWN_EX 15
#define F_SETLEASE 1024 /* F_LINUX_SPECIFIC_BASE (include/uapi/linux/fcntl.h) */
#define F_NOTIFY 1026
#define F_OWNER_TID 0 /* struct f_owner_ex.type */
#define F_OWNER_PID 1

/* ---- mappings (include/uapi/asm-generic/mman-common.h, include/linux/mm.h) ---- */
#define PROT_WRITE 0x2
#define PROT_EXEC 0x4
#define MAP_TYPE 0x0f /* the sharing type bits of mmap flags */
#define MAP_SHARED 0x01
#define MAP_SHARED_VALIDATE 0x03
#define VM_SHARED 0x8

/* ---- superblocks (include/linux/fs.h) ---- */
#define SB_KERNMOUNT (1U << 22)

/* ---- attribute changes (include/linux/fs.h, struct iattr.ia_valid) ---- */
#define ATTR_SIZE (1U << 3)
#define ATTR_MTIME (1U << 5)
#define ATTR_CTIME (1U << 6)
#define ATTR_FORCE (1U << 9)
#define ATTR_KILL_SUID (1U << 11)
#define ATTR_KILL_SGID (1U << 12)
#define ATTR_FILE (1U << 13)
#define ATTR_KILL_PRIV (1U << 14)
#define ATTR_OPEN (1U << 15)

/* ---- tasks and limits (include/linux/sched.h, include/linux/security.h,
 * include/uapi/asm-generic/resource.h) ---- */
#define PF_KTHREAD 0x00200000
#define LSM_PRLIMIT_WRITE 2
#define RLIMIT_CORE 4

/* ---- keys (include/linux/key.h) ---- */
#define KEY_ALLOC_UID_KEYRING 0x0010 /* a user or user session keyring */

/* ---- capabilities (include/uapi/linux/capability.h,
 * include/linux/security.h): those on the K4 allow list ---- */
#define CAP_CHOWN 0
#define CAP_DAC_OVERRIDE 1
#define CAP_FOWNER 3
#define CAP_FSETID 4
#define CAP_KILL 5
#define CAP_SETGID 6
#define CAP_SETUID 7
#define CAP_SETPCAP 8
#define CAP_NET_BIND_SERVICE 10
#define CAP_NET_RAW 13
#define CAP_SYS_CHROOT 18
#define CAP_SETFCAP 31
#define CAP_OPT_NOAUDIT (1U << 1) /* capable()'s opts: a quiet check */

/* ---- device numbers (include/uapi/linux/major.h, miscdevice.h,
 * Documentation/admin-guide/devices.txt); kernel dev_t is major<<20|minor ---- */
#define MAJOR(dev) ((__u32)(dev) >> 20)
#define MINOR(dev) ((__u32)(dev) & 0xfffff)
#define MKDEV(ma, mi) (((__u32)(ma) << 20) | (__u32)(mi))

#define MEM_MAJOR 1 /* minors: */
#define MEM_NULL_MINOR 3
#define MEM_ZERO_MINOR 5
#define MEM_FULL_MINOR 7
#define MEM_RANDOM_MINOR 8
#define MEM_URANDOM_MINOR 9
#define MEM_KMSG_MINOR 11
#define KMSG_RDEV MKDEV(MEM_MAJOR, MEM_KMSG_MINOR) /* /dev/kmsg */
#define TTY_MAJOR 4	    /* virtual consoles and serial lines */
#define TTYAUX_MAJOR 5	    /* minors 0-2: /dev/tty, /dev/console, /dev/ptmx */
#define TTYAUX_PTMX_MINOR 2
#define MISC_MAJOR 10	    /* minors: */
#define TUN_MINOR 200
#define VHOST_NET_MINOR 238
#define VHOST_VSOCK_MINOR 241
#define SCSI_GENERIC_MAJOR 21 /* /dev/sg* */
#define PPP_MAJOR 108
#define UNIX98_PTY_SLAVE_MAJOR 136 /* pty slaves: 136 to 143 */
#define UNIX98_PTY_SLAVE_MAJOR_LAST 143

/* ---- filesystem magics (include/uapi/linux/magic.h; ZFS and bcachefs:
 * their own sources) ---- */
enum fs_magic {
	/* kernel interfaces (tamper.h kernel_fs_magic) */
	PROC_SUPER_MAGIC = 0x9fa0,
	CGROUP_SUPER_MAGIC = 0x27e0eb,
	CGROUP2_SUPER_MAGIC = 0x63677270,
	SYSFS_MAGIC = 0x62656572,
	SECURITYFS_MAGIC = 0x73636673,
	DEBUGFS_MAGIC = 0x64626720,
	TRACEFS_MAGIC = 0x74726163,
	CONFIGFS_MAGIC = 0x62656570,
	EFIVARFS_MAGIC = 0xde5e81e4,
	PSTOREFS_MAGIC = 0x6165676c,
	BINFMTFS_MAGIC = 0x42494e4d,
	BPF_FS_MAGIC = 0xcafe4a11,
	FUSECTL_SUPER_MAGIC = 0x65735543,  /* /sys/fs/fuse/connections: abort, limits */
	SELINUX_MAGIC = 0xf97cff8c,        /* selinuxfs: policy, enforce, avc tunables */
	SMACK_MAGIC = 0x43415d53,          /* smackfs */
	RDTGROUP_SUPER_MAGIC = 0x7655821,  /* resctrl: cache and memory bandwidth */
	NFSD_MAGIC = 0x6e667364,           /* nfsd's control filesystem */
	RPCAUTH_GSSMAGIC = 0x67596969,     /* rpc_pipefs */
	XENFS_SUPER_MAGIC = 0xabba1974,    /* xenfs */
	FUNCTIONFS_MAGIC = 0xa647361,      /* USB gadget functions */
	BINDERFS_SUPER_MAGIC = 0x6c6f6f70, /* binderfs: binder-control */
	/* storage whose inode times the kernel sets (exec.h ctime_local) */
	EXT4_SUPER_MAGIC = 0xEF53,
	XFS_SUPER_MAGIC = 0x58465342,
	BTRFS_SUPER_MAGIC = 0x9123683E,
	TMPFS_MAGIC = 0x01021994,
	RAMFS_MAGIC = 0x858458f6,
	OVERLAYFS_SUPER_MAGIC = 0x794c7630,
	SQUASHFS_MAGIC = 0x73717368,
	EROFS_SUPER_MAGIC_V1 = 0xE0F5E1E2,
	F2FS_SUPER_MAGIC = 0xF2F52010,
	ISOFS_SUPER_MAGIC = 0x9660,
	ZFS_SUPER_MAGIC = 0x2fc12fc1,
	BCACHEFS_SUPER_MAGIC = 0xca451a4e,
};

/* ---- ioctl requests (include/uapi: linux/fs.h, linux/fsverity.h,
 * linux/fscrypt.h, linux/hdreg.h, scsi/sg.h, linux/cdrom.h,
 * asm-generic/ioctls.h, asm-generic/sockios.h, linux/nvme_ioctl.h). The _32
 * variants are the compat (32-bit) encodings of the same request where the
 * argument size differs. ---- */
#define FIBMAP 0x00000001U /* also SCSI_IOCTL_SEND_COMMAND on devices */
#define FIGETBSZ 0x00000002U
#define HDIO_GETGEO 0x00000301U
#define BLKROGET 0x0000125eU
#define BLKGETSIZE 0x00001260U
#define BLKSSZGET 0x00001268U
#define BLKIOMIN 0x00001278U
#define BLKIOOPT 0x00001279U
#define BLKALIGNOFF 0x0000127aU
#define BLKPBSZGET 0x0000127bU
#define BLKDISCARDZEROES 0x0000127cU
#define BLKROTATIONAL 0x0000127eU
#define BLKBSZGET 0x80081270U
#define BLKBSZGET_32 0x80041270U
#define BLKGETSIZE64 0x80081272U
#define BLKGETSIZE64_32 0x80041272U
#define BLKDISCARD 0x00001277U
#define BLKSECDISCARD 0x0000127dU
#define BLKZEROOUT 0x0000127fU
#define SG_IO 0x00002285U
#define CDROM_SEND_PACKET 0x00005393U
#define TCGETS 0x00005401U
#define TIOCGPGRP 0x0000540fU
#define TIOCSTI 0x00005412U
#define TIOCGWINSZ 0x00005413U
#define FIONREAD 0x0000541bU
#define TIOCLINUX 0x0000541cU
#define FIONBIO 0x00005421U
#define FIONCLEX 0x00005450U
#define FIOCLEX 0x00005451U
#define FIOASYNC 0x00005452U
#define FIOQSIZE 0x00005460U
#define TCGETS2 0x802c542aU
#define FIOSETOWN 0x00008901U
#define SIOCSPGRP 0x00008902U
#define FS_IOC_GETFLAGS 0x80086601U
#define FS_IOC32_GETFLAGS 0x80046601U
#define FS_IOC_GETVERSION 0x80087601U
#define FS_IOC32_GETVERSION 0x80047601U
#define FS_IOC_FSGETXATTR 0x801c581fU
#define FS_IOC_FIEMAP 0xc020660bU
#define FS_IOC_MEASURE_VERITY 0xc0046686U
#define FS_IOC_READ_VERITY_METADATA 0xc0286687U
#define FS_IOC_GET_ENCRYPTION_POLICY 0x400c6615U
#define FS_IOC_GET_ENCRYPTION_POLICY_EX 0xc0096616U
#define FS_IOC_GET_ENCRYPTION_KEY_STATUS 0xc080661aU
#define FS_IOC_GETFSLABEL 0x81009431U
/* Reflink (linux/fs.h): the descriptor named is the destination, the
 * source is only read; same numbers for 32-bit callers. */
#define FICLONE 0x40049409U
#define FICLONERANGE 0x4020940dU
#define FS_IOC_GETFSUUID 0x80111500U
#define FS_IOC_GETFSSYSFSPATH 0x80811501U
#define NVME_IOCTL_ADMIN_CMD 0xc0484e41U
#define NVME_IOCTL_SUBMIT_IO 0x40304e42U
#define NVME_IOCTL_IO_CMD 0xc0484e43U
#define NVME_IOCTL_ADMIN64_CMD 0xc0504e47U
#define NVME_IOCTL_IO64_CMD 0xc0504e48U
#define NVME_IOCTL_IO64_CMD_VEC 0xc0504e49U
/* Legacy requests without a size or direction (bits 16-31 zero), by type
 * byte: KD* keyboard and console state (include/uapi/linux/kd.h, 'K') and
 * VT_* virtual terminal switching (include/uapi/linux/vt.h, 'V'). */
#define KD_IOC_BASE 0x4b00
#define VT_IOC_BASE 0x5600
#define LEGACY_IOC(cmd, base) (((cmd) & 0xff00) == (base) && ((cmd) >> 16) == 0)

#endif /* ENFORCERD_CONSTS_H */
