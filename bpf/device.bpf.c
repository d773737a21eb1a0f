//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Device nodes are host objects (docs/threat-model.md "Devices and
 * terminals", D1-D4), under every ceiling: opening (any mode), reading,
 * writing, ioctl and mmap of a character or block device is decided by an
 * allow list:
 *
 *  - the null-like devices (1:3 null, 1:5 zero, 1:7 full, 1:8 random,
 *    1:9 urandom);
 *  - the sandbox's own terminals: declared at registration
 *    (enforcer.Entry.Terminals), or ptys it created from /dev/ptmx
 *    (pty_owners, devices.h);
 *  - the devices the operator lists for the container
 *    (enforcer.Entry.AllowDevices), met with every registered ancestor's.
 *
 * A terminal that is neither own nor created nor listed may be opened
 * read-only with O_NOCTTY (never taken as a controlling terminal, whose
 * session leader's exit would hang it up for every holder) and asked the read-only queries (tty_query) that isatty(),
 * stty -g and job control need; no read (it steals the host session's
 * input), no write, no other ioctl. /dev/tty, /dev/console, /dev/ptmx and
 * /dev/tty0 redirect inside tty_open, after security_file_open: their open
 * is allowed and every later use is decided on the tty the file reached.
 * Descriptors opened before the registration (inherited, passed in) are
 * decided at read, write, ioctl and mmap all the same.
 *
 * Device memory and registers without a device node are refused the same
 * way (rule host-device): an open (any mode), read or write of the sysfs
 * PCI BAR, legacy and ROM files and of /proc/bus/pci/BB/DD.F, and the mmap
 * of any sysfs or procfs file.
 *
 * Under network=false with enforcer.Entry.DenyConsoleEgress, writes to an
 * own terminal that leaves the machine (reached through /dev/console, a
 * serial line, a hypervisor console, ttyprintk) are refused.
 *
 * Other rules on devices stay where they were and apply as well: N7
 * (network devices under network=false), K5 (raw storage), X3 (TIOCSTI,
 * TIOCLINUX, KD*, VT_* on every terminal), W9 (the write ceiling's own
 * list) in file.bpf.c.
 *
 * Host cost: every program first tests the inode type (or the superblock
 * for the pty record hooks) and returns for everything but devices.
 */
#include "devices.h"

char LICENSE[] SEC("license") = "GPL";

#define MAY_READ 0x4
#define DEVPTS_SUPER_MAGIC 0x1cd1
#define UNIX98_PTY_MASTER_MAJOR 128 /* masters: 128 to 135 */
#define TTYAUX_CONSOLE_MINOR 1
#define TTYPRINTK_MINOR 3
#define HVC_MAJOR 229
#define AMBA_MAJOR 204 /* ttyAMA and other SoC serial lines */
#define USB_ACM_MAJOR 166
#define USB_SERIAL_MAJOR 188
#define TTYS_MINOR_START 64 /* ttyS0 is 4:64 */
#define O_NOCTTY 00000400 /* f_flags; do_dentry_open clears it after the
			   * driver's open, so file_open still sees it */

/* Read-only terminal queries (include/uapi/asm-generic/ioctls.h); the same
 * numbers through the compat entry. */
#define TCGETA 0x00005405U
#define TIOCOUTQ 0x00005411U
#define TIOCMGET 0x00005415U
#define TIOCGSOFTCAR 0x00005419U
#define TIOCGETD 0x00005424U
#define TIOCGSID 0x00005429U
#define TIOCGRS485 0x0000542eU
#define TIOCGPTN 0x80045430U
#define TIOCGDEV 0x80045432U
#define TIOCGPKT 0x80045438U
#define TIOCGPTLCK 0x80045439U
#define TIOCGEXCL 0x80045440U
#define TIOCGLCKTRMIOS 0x00005456U

enum device_op {
	DEV_OPEN,
	DEV_READ,
	DEV_WRITE,
	DEV_IOCTL,
	DEV_MMAP,
};

/* null_like: devices that store and reach nothing. */
static __always_inline bool null_like(__u32 rdev)
{
	if (MAJOR(rdev) != MEM_MAJOR)
		return false;
	__u32 min = MINOR(rdev);
	return min == MEM_NULL_MINOR || min == MEM_ZERO_MINOR || min == MEM_FULL_MINOR ||
	       min == MEM_RANDOM_MINOR || min == MEM_URANDOM_MINOR;
}

/* tty_file: a character device whose open file is a tty (its private_data
 * a struct tty_file_private): virtual consoles and 8250 serial lines (4),
 * /dev/tty, /dev/console, /dev/ptmx, ttyprintk (5:0-3), UNIX98 pty
 * masters and slaves (128-143). Other tty drivers (hvc, ttyAMA, USB
 * serial) are decided by their device number like any device. */
static __always_inline bool tty_file(__u32 rdev)
{
	__u32 maj = MAJOR(rdev);
	if (maj == TTYAUX_MAJOR)
		return MINOR(rdev) <= TTYPRINTK_MINOR;
	return maj == TTY_MAJOR ||
	       (maj >= UNIX98_PTY_MASTER_MAJOR && maj <= UNIX98_PTY_SLAVE_MAJOR_LAST);
}

/* redirect: opening it reaches another tty (tty_lookup_driver): /dev/tty
 * (the controlling tty), /dev/console, /dev/ptmx (a new pty), /dev/tty0
 * (the foreground virtual console). */
static __always_inline bool redirect(__u32 rdev)
{
	return rdev == MKDEV(TTYAUX_MAJOR, 0) || rdev == MKDEV(TTYAUX_MAJOR, TTYAUX_CONSOLE_MINOR) ||
	       rdev == MKDEV(TTYAUX_MAJOR, TTYAUX_PTMX_MINOR) || rdev == MKDEV(TTY_MAJOR, 0);
}

/* leaves_machine: a tty whose output leaves the machine: serial lines,
 * hypervisor consoles, ttyprintk (into the kernel log). */
static __always_inline bool leaves_machine(__u32 dev)
{
	__u32 maj = MAJOR(dev);
	if (maj == TTY_MAJOR)
		return MINOR(dev) >= TTYS_MINOR_START;
	return maj == HVC_MAJOR || maj == AMBA_MAJOR || maj == USB_ACM_MAJOR ||
	       maj == USB_SERIAL_MAJOR || dev == MKDEV(TTYAUX_MAJOR, TTYPRINTK_MINOR);
}

/* tty_query: the closed list of ioctls a terminal that is not the
 * sandbox's own still answers: reads of its state and descriptor flags. */
static __always_inline bool tty_query(unsigned int cmd)
{
	switch (cmd) {
	case TCGETS:
	case TCGETS2:
	case TCGETA:
	case TIOCGWINSZ:
	case TIOCGPGRP:
	case TIOCGSID:
	case FIONREAD:
	case TIOCOUTQ:
	case TIOCMGET:
	case TIOCGSOFTCAR:
	case TIOCGETD:
	case TIOCGRS485:
	case TIOCGPTN:
	case TIOCGDEV:
	case TIOCGPKT:
	case TIOCGPTLCK:
	case TIOCGEXCL:
	case TIOCGLCKTRMIOS:
	case FIONBIO:
	case FIOCLEX:
	case FIONCLEX:
		return true;
	}
	return false;
}

/* pty_slave_inode: the devpts inode of a UNIX98 pty's slave, from either
 * end's tty (the slave's driver_data is its devpts dentry, pty.c
 * ptmx_open). NULL for every other tty. */
static __always_inline struct inode *pty_slave_inode(struct tty_struct *tty, int maj)
{
	if (maj < UNIX98_PTY_MASTER_MAJOR || maj > UNIX98_PTY_SLAVE_MAJOR_LAST)
		return NULL;
	if (maj <= UNIX98_PTY_SLAVE_MAJOR - 1)
		tty = BPF_CORE_READ(tty, link);
	if (!tty)
		return NULL;
	struct dentry *d = (struct dentry *)BPF_CORE_READ(tty, driver_data);
	if (!d)
		return NULL;
	return BPF_CORE_READ(d, d_inode);
}

/* tty_identity fills w with the identity of the tty the open file reaches
 * (file->private_data, a struct tty_file_private): for a pty, its slave's
 * device number, devpts instance and creation record; else the tty's
 * device number. Unreadable: identity 0, which nothing lists. */
static __always_inline void tty_identity(struct file *file, struct device_walk *w)
{
	struct tty_file_private *priv = (struct tty_file_private *)BPF_CORE_READ(file, private_data);
	struct tty_struct *tty = priv ? BPF_CORE_READ(priv, tty) : NULL;
	if (!tty)
		return;
	int maj = BPF_CORE_READ(tty, driver, major);
	struct inode *slave = pty_slave_inode(tty, maj);
	if (slave) {
		w->dev = BPF_CORE_READ(slave, i_rdev);
		w->pts_dev = BPF_CORE_READ(slave, i_sb, s_dev);
		w->created = pty_created_mask((__u64)slave);
		return;
	}
	int min = BPF_CORE_READ(tty, driver, minor_start) + BPF_CORE_READ(tty, index);
	w->dev = MKDEV(maj, min);
}

/* inode_identity: the identity of a device by its inode (a pty slave
 * opened by path: its devpts instance and creation record). */
static __always_inline void inode_identity(struct inode *inode, __u32 rdev,
					   struct device_walk *w)
{
	w->dev = rdev;
	__u32 maj = MAJOR(rdev);
	if (w->kind == DEVICE_CHR && maj >= UNIX98_PTY_SLAVE_MAJOR &&
	    maj <= UNIX98_PTY_SLAVE_MAJOR_LAST) {
		w->pts_dev = BPF_CORE_READ(inode, i_sb, s_dev);
		w->created = pty_created_mask((__u64)inode);
	}
}

/*
 * device_use: the decision on one use (op) of a device file; cmd is the
 * ioctl request (DEV_IOCTL). 0 for everything that is not a character or
 * block device.
 */
static __always_inline int device_use(struct file *file, enum device_op op,
				      unsigned int cmd, __u16 hook)
{
	struct inode *inode = file->f_inode;
	if (!inode)
		return 0;
	__u32 fmt = inode->i_mode & S_IFMT;
	if (fmt != S_IFCHR && fmt != S_IFBLK)
		return 0;
	__u32 rdev = inode->i_rdev;
	bool chr = fmt == S_IFCHR;
	if (chr && null_like(rdev))
		return 0;
	bool tty = chr && tty_file(rdev);
	/* The redirects never make the tty they reach a controlling
	 * terminal (tty_lookup_driver sets noctty for /dev/tty0 and
	 * /dev/console, /dev/tty is the current one, a ptmx master never). */
	if (tty && op == DEV_OPEN && redirect(rdev))
		return 0; /* decided at every use, on the tty it reached */
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	int d = verdict(&e, DENY_TAMPER);
	if (!d)
		return 0;
	struct device_walk w = {};
	w.kind = chr ? DEVICE_CHR : DEVICE_BLK;
	if (tty && op != DEV_OPEN) {
		tty_identity(file, &w);
		w.egress = op == DEV_WRITE &&
			   (rdev == MKDEV(TTYAUX_MAJOR, TTYAUX_CONSOLE_MINOR) || leaves_machine(w.dev));
	} else {
		inode_identity(inode, rdev, &w);
		w.egress = op == DEV_WRITE && chr && leaves_machine(rdev);
	}
	int v = device_decision(d, &w);
	__u32 rule = tty ? RULE_TERMINAL_OUTSIDE : RULE_HOST_DEVICE;
	__u32 bit = DENY_TAMPER;
	if (v && tty) {
		/* A terminal not the sandbox's: a read-only open with
		 * O_NOCTTY (without it, a session leader with no controlling
		 * terminal takes this one, and its exit hangs the terminal up
		 * for every holder: tty_open_proc_set_tty), queries. */
		if (op == DEV_OPEN && !(file->f_mode & FMODE_WRITE) && (file->f_flags & O_NOCTTY))
			v = 0;
		else if (op == DEV_IOCTL && tty_query(cmd))
			v = 0;
	}
	if (!v && (w.egress_deny || w.egress_audit)) {
		v = w.egress_deny ? DECISION_DENIED : DECISION_AUDITED;
		rule = RULE_CONSOLE_EGRESS;
		bit = DENY_NETWORK;
	}
	if (!v)
		return 0;
	record_event(&e, hook, v, bit, {
		set_rule(ev, rule);
		fill_inode(ev, file->f_inode);
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

/* The bytes of a kernfs or dentry name that pci_register_name needs. */
#define IFACE_NAME_LEN 16

static __always_inline bool lit_is(const char *b, const char *lit, int n)
{
	for (int i = 0; i < n && i < IFACE_NAME_LEN; i++) {
		if (b[i] != lit[i])
			return false;
	}
	return true;
}

/* pci_register_name: a sysfs attribute of a PCI device or bus whose read
 * or mmap reaches device memory or registers (drivers/pci/pci-sysfs.c):
 * resourceN and resourceN_wc (the BARs), legacy_io and legacy_mem (the
 * bus's legacy I/O ports and ISA memory), rom. Not "resource" (a text
 * listing of the BAR addresses) nor "config" (configuration space: what
 * lspci reads; a read has no side effect). */
static __always_inline bool pci_register_name(const char *kname)
{
	char b[IFACE_NAME_LEN] = {};
	if (bpf_probe_read_kernel_str(b, sizeof(b), kname) <= 0)
		return false;
	if (lit_is(b, "resource", 8))
		return b[8] >= '0' && b[8] <= '9';
	return lit_is(b, "legacy_io", 10) || lit_is(b, "legacy_mem", 11) || lit_is(b, "rom", 4);
}

static __always_inline bool dentry_name_is(struct dentry *d, const char *lit, int n)
{
	char b[IFACE_NAME_LEN] = {};
	if (!d || bpf_probe_read_kernel_str(b, sizeof(b), BPF_CORE_READ(d, d_name.name)) <= 0)
		return false;
	return lit_is(b, lit, n);
}

/* device_register_file: a kernel interface file that reaches device memory
 * or registers without a device node: the sysfs PCI attributes of
 * pci_register_name, and /proc/bus/pci/BB/DD.F (configuration space, the
 * PCIIOC_MMAP_IS_IO/MEM ioctls and mmap of the BARs, drivers/pci/proc.c).
 * Matched by name within sysfs and procfs: a bind mount or a new procfs
 * mount reaches the same nodes. */
static __always_inline bool device_register_file(struct file *file)
{
	struct inode *inode = file->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFREG)
		return false;
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return false;
	unsigned long magic = sb->s_magic;
	if (magic == SYSFS_MAGIC) {
		struct kernfs_node *kn = BPF_CORE_READ(inode, i_private);
		return kn && pci_register_name(BPF_CORE_READ(kn, name));
	}
	if (magic != PROC_SUPER_MAGIC)
		return false;
	struct dentry *bus = BPF_CORE_READ(file, f_path.dentry, d_parent, d_parent);
	return dentry_name_is(bus, "pci", 4) && dentry_name_is(BPF_CORE_READ(bus, d_parent), "bus", 4);
}

/* kernel_iface_file: sysfs and procfs files, the only ones
 * device_register_file can name (one superblock read). Mapping one is
 * never a sandbox's business: the ones that implement mmap are device
 * memory (PCI BARs, legacy I/O and memory, /proc/bus/pci) or kernel memory
 * images. */
static __always_inline bool kernel_iface_file(struct file *file)
{
	struct inode *inode = file->f_inode;
	struct super_block *sb = inode ? inode->i_sb : NULL;
	if (!sb)
		return false;
	unsigned long magic = sb->s_magic;
	return magic == SYSFS_MAGIC || magic == PROC_SUPER_MAGIC;
}

/* device_register_use: the decision on an open (any mode), read or write
 * of a device_register_file (by_name), or an mmap of any kernel_iface_file,
 * under every ceiling (rule host-device, D1). The names are read only for
 * a sandboxed task: a process outside every sandbox reading procfs or
 * sysfs pays the superblock test and resolve's cache hit, no string read. */
static __always_inline int device_register_use(struct file *file, __u16 hook, bool by_name)
{
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	if (by_name && !device_register_file(file))
		return 0;
	record_event(&e, hook, v, DENY_TAMPER, {
		set_rule(ev, RULE_HOST_DEVICE);
		fill_inode(ev, file->f_inode);
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

SEC("lsm/file_open")
int BPF_PROG(device_file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	if (kernel_iface_file(file))
		return device_register_use(file, HOOK_FILE_OPEN, true);
	return device_use(file, DEV_OPEN, 0, HOOK_FILE_OPEN);
}

/* Every read and write, whatever the entry (read/write, splice, sendfile,
 * io_uring, AIO), on descriptors opened before the registration too. */
SEC("lsm/file_permission")
int BPF_PROG(device_file_permission, struct file *file, int mask, int ret)
{
	if (ret)
		return ret;
	enum device_op op;
	if (mask & (MAY_WRITE | MAY_APPEND))
		op = DEV_WRITE;
	else if (mask & MAY_READ)
		op = DEV_READ;
	else
		return 0;
	/* A register file's descriptor opened outside and passed in. */
	if (kernel_iface_file(file))
		return device_register_use(file, HOOK_FILE_PERMISSION, true);
	return device_use(file, op, 0, HOOK_FILE_PERMISSION);
}

SEC("lsm/file_ioctl")
int BPF_PROG(device_file_ioctl, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	return device_use(file, DEV_IOCTL, cmd, HOOK_FILE_IOCTL);
}

/* Linux 6.7+; older kernels pass compat requests through file_ioctl.
 * Optional hook. */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(device_file_ioctl_compat, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	return device_use(file, DEV_IOCTL, cmd, HOOK_FILE_IOCTL_COMPAT);
}

SEC("lsm/mmap_file")
int BPF_PROG(device_mmap_file, struct file *file, unsigned long reqprot,
	     unsigned long prot, unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!file)
		return 0;
	if (kernel_iface_file(file))
		return device_register_use(file, HOOK_MMAP_FILE, false);
	return device_use(file, DEV_MMAP, 0, HOOK_MMAP_FILE);
}

/* The value a record starts from (off the stack: 6.1's combined limit). */
static const struct owner owner_none;

/* pty_slave: a devpts inode of a pty slave. */
static __always_inline bool pty_slave(struct inode *inode)
{
	if (!inode)
		return false;
	struct super_block *sb = inode->i_sb;
	if (!sb || sb->s_magic != DEVPTS_SUPER_MAGIC)
		return false;
	__u32 maj = MAJOR(inode->i_rdev);
	return (inode->i_mode & S_IFMT) == S_IFCHR && maj >= UNIX98_PTY_SLAVE_MAJOR &&
	       maj <= UNIX98_PTY_SLAVE_MAJOR_LAST;
}

/* A new pty: ptmx_open -> devpts_pty_new -> d_add, in the context of the
 * process that opened /dev/ptmx. Recorded when that process is below a
 * registered cgroup (active or pending: a runtime's init makes the
 * container's console before its first exec). A record that cannot be
 * created leaves the pty unrecorded: not the sandbox's (fail closed). */
SEC("lsm/d_instantiate")
int BPF_PROG(device_dentry_instantiate, struct dentry *dentry, struct inode *inode)
{
	if (!pty_slave(inode))
		return 0;
	struct effective e = {};
	if (!resolve(&e) && !e.pending)
		return 0;
	__u64 k = (__u64)inode;
	struct owner *o = bpf_map_lookup_elem(&pty_owners, &k);
	if (!o) {
		if (bpf_map_update_elem(&pty_owners, &k, &owner_none, BPF_ANY))
			return 0;
		o = bpf_map_lookup_elem(&pty_owners, &k);
		if (!o)
			return 0;
	}
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
		o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
	return 0;
}

/* The pty's end: its record goes with its inode, before the address can
 * be reused. */
SEC("lsm/inode_free_security")
int BPF_PROG(device_inode_free_security, struct inode *inode)
{
	if (!pty_slave(inode))
		return 0;
	__u64 k = (__u64)inode;
	bpf_map_delete_elem(&pty_owners, &k);
	return 0;
}
