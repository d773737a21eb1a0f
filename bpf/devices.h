/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Device nodes are host objects (docs/threat-model.md, "Devices and
 * terminals"): under every ceiling, opening, reading, writing, ioctl and
 * mmap of a character or block device is decided by an allow list. This
 * header holds what user space writes and the kernel records for that
 * decision, and (below, "The rules") the decision itself:
 *
 *  - device_allow: registered cgroup id -> the devices the operator lists
 *    for it (enforcer.Entry.AllowDevices), the terminals declared its own
 *    at registration (enforcer.Entry.Terminals) and its flags
 *    (DEVICES_DENY_CONSOLE_EGRESS: enforcer.Entry.DenyConsoleEgress). No
 *    entry: nothing listed. A registration writes its list before its
 *    ceiling (enforcer/devices.go); the lists are read live, never cached.
 *  - pty_owners: pty slave inode address -> the cgroup ancestors of the
 *    process that created the pty from /dev/ptmx (recorded when devpts
 *    instantiates the slave, removed when the inode is freed: a record
 *    never outlives its pty, so a sandbox cannot claim a pty made
 *    outside). A pty without a record (made outside, or the map was full)
 *    is not the sandbox's: fail closed.
 *
 * The meet: a device or terminal is usable only when every registered,
 * active ancestor lists it (or, for a pty, saw it created in its subtree):
 * device_decision walks the ancestors like endpoint_decision does.
 */
#ifndef ENFORCERD_DEVICES_H
#define ENFORCERD_DEVICES_H

#include "enforcerd.h"
#include "ipc.h" /* struct owner */
#include "pgrp.h"

enum device_limits {
	MAX_ALLOW_DEVICES = 16, /* enforcer.MaxAllowDevices */
	MAX_TERMINALS = 8,	/* enforcer.MaxTerminals */
};

/* device_entry.kind */
enum device_kind {
	DEVICE_CHR = 1,
	DEVICE_BLK = 2,
};

/* Bits of device_list.flags. */
enum device_flag {
	DEVICES_DENY_CONSOLE_EGRESS = 1U << 0, /* under network=false, an own
						* terminal that leaves the
						* machine is refused */
};

struct device_entry {
	__u32 dev;  /* kernel encoding major<<20|minor */
	__u32 kind; /* enum device_kind */
};

struct terminal_entry {
	__u32 dev;     /* the tty's device number, kernel encoding */
	__u32 pts_dev; /* a pty slave: its devpts instance's s_dev; else 0 */
};

/* What one registered cgroup lists. */
struct device_list {
	__u32 ndev;  /* entries used in dev */
	__u32 nterm; /* entries used in term */
	__u32 flags; /* enum device_flag */
	__u32 pad;
	struct device_entry dev[MAX_ALLOW_DEVICES];
	struct terminal_entry term[MAX_TERMINALS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* cgroup v2 id, as in ceilings */
	__type(value, struct device_list);
} device_allow SEC(".maps");

/* kernel.pty.max is 4096 by default (each devpts instance adds at most its
 * own max, which counts against the same total): twice that. */
#define MAX_PTY_OWNERS 8192

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PTY_OWNERS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* struct inode address of the pty slave */
	__type(value, struct owner);
} pty_owners SEC(".maps");

/* The state of one device_decision walk. */
struct device_walk {
	__u32 dev;
	__u32 pts_dev;
	__u32 kind;	  /* enum device_kind */
	__u32 created;	  /* bit L: a pty created below the level-L ancestor */
	__u32 egress;	  /* the use leaves the machine (console, serial) */
	__u32 miss_deny;  /* an enforcing ancestor lists it not */
	__u32 miss_audit; /* an audit-only ancestor lists it not */
	__u32 seen_deny;  /* an enforcing ancestor was seen */
	__u32 egress_deny, egress_audit; /* an ancestor refuses the egress */
};

static __always_inline bool device_listed(const struct device_list *l,
					  const struct device_walk *w)
{
	__u32 n = l->ndev;
	for (int i = 0; i < MAX_ALLOW_DEVICES; i++) {
		if (i >= n)
			break;
		if (l->dev[i].dev == w->dev && l->dev[i].kind == w->kind)
			return true;
	}
	if (w->kind != DEVICE_CHR)
		return false;
	n = l->nterm;
	for (int i = 0; i < MAX_TERMINALS; i++) {
		if (i >= n)
			break;
		if (l->term[i].dev == w->dev && l->term[i].pts_dev == w->pts_dev)
			return true;
	}
	return false;
}

static long device_level(__u32 level, void *ctx)
{
	struct device_walk *w = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id)
		return 1;
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c || (c->flags & CEILING_PENDING))
		return 0;
	bool audit = (c->flags & CEILING_AUDIT_ONLY) != 0;
	if (!audit)
		w->seen_deny = 1;
	struct device_list *l = bpf_map_lookup_elem(&device_allow, &id);
	if (w->egress && l && (l->flags & DEVICES_DENY_CONSOLE_EGRESS) &&
	    (c->deny & DENY_NETWORK)) {
		if (audit)
			w->egress_audit = 1;
		else
			w->egress_deny = 1;
	}
	if (level < 32 && (w->created & (1U << level)))
		return 0;
	if (l && device_listed(l, w))
		return 0;
	if (audit)
		w->miss_audit = 1;
	else
		w->miss_deny = 1;
	return 0;
}

/*
 * device_decision: d is the tamper verdict of the current task
 * (verdict(e, DENY_TAMPER): DECISION_DENIED or DECISION_AUDITED); the
 * result is 0 when every active ancestor lists the device of w (or saw the
 * pty created in its subtree), DECISION_AUDITED when only audit-only ones
 * miss it, else DECISION_DENIED. Fail direction: a task deeper than
 * MAX_CGROUP_LEVEL, or a denial with no enforcing ancestor found by the
 * walk (the entry went away under us), keeps d.
 */
static __always_inline int device_decision(int d, struct device_walk *w)
{
	if (!d)
		return 0;
	if (bpf_get_current_ancestor_cgroup_id(MAX_CGROUP_LEVEL))
		return d;
	LOOP_STATE_UNKNOWN(*w, miss_deny, egress_audit); /* loop.h */
	bpf_loop(MAX_CGROUP_LEVEL, device_level, w, 0);
	if (w->miss_deny || (d == DECISION_DENIED && !w->seen_deny))
		return DECISION_DENIED;
	if (w->miss_audit)
		return DECISION_AUDITED;
	return 0;
}

/* pty_created_mask: bit L set when the pty slave inode at address ino was
 * created by a process below the current task's level-L ancestor. 0: no
 * record (created outside every sandbox, or unrecorded). */
static __always_inline __u32 pty_created_mask(__u64 ino)
{
	struct owner *o = bpf_map_lookup_elem(&pty_owners, &ino);
	if (!o)
		return 0;
	__u32 mask = 0;
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(i);
		if (!id)
			break;
		if (o->anc[i] == id)
			mask |= 1U << i;
	}
	return mask;
}

/* ---- The rules ---- */

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
 * These rules run inside file.bpf.c's programs on file_open,
 * file_permission, file_ioctl, file_ioctl_compat and mmap_file
 * (device_*_rule below), after that object's own checks: one program per
 * hook, not a second one beside it (every program attached at a hook costs
 * every caller on the host its trampoline round trip, docs/performance.md).
 * The pty records are kept by ipc.bpf.c's d_instantiate and
 * inode_free_security programs.
 *
 * Host cost: every rule first tests the inode type (or the superblock for
 * the pty records) and returns for everything but devices.
 */

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
 * Signals the tty core sends for a use of a terminal (E4). They are sent
 * by the kernel (SEND_SIG_PRIV), so task_kill never sees them; the use
 * that causes them is refused instead, when the process group they go to
 * has a member outside the sandbox:
 *
 *  - TIOCSWINSZ: SIGWINCH to the terminal's foreground process group and
 *    to its pty peer's (tty_do_resize, pty_resize);
 *  - from a caller in a background process group of its controlling
 *    terminal: SIGTTIN for a read, SIGTTOU for a write under TOSTOP and
 *    for an ioctl that changes the terminal (__tty_check_change), to the
 *    caller's own process group;
 *  - TIOCSPGRP while the caller's session holds a process outside: the
 *    foreground group it names gets the terminal's later signals.
 *
 * A sandbox cannot join a process group with a member outside
 * (task_setpgid, tamper.bpf.c), so its own group has one only when it
 * started in it.
 *
 * Under `enforcerd run` from an interactive shell the sandbox shares
 * run's process group: its resize is refused, and a backgrounded job
 * that reads its terminal gets EPERM instead of stopping (which would
 * stop run as well). A process group with more members than walked is
 * outside (fail closed).
 */
#define TIOCSWINSZ 0x00005414U
#define TIOCSPGRP 0x00005410U
#define TOSTOP_FLAG 0000400 /* termios c_lflag TOSTOP */
/* tty_signals_outside: the use (op, cmd) of the tty file by the current,
 * enforced process would make the tty core signal a process group with
 * a member outside its sandbox (level, cgid). A subprogram: its frame
 * stays off the calling program's. */
static __noinline bool tty_signals_outside(struct file *file, __u32 op, unsigned int cmd,
					   __s32 level, __u64 cgid)
{
	if (!file)
		return false;
	struct tty_file_private *priv = (struct tty_file_private *)BPF_CORE_READ(file, private_data);
	struct tty_struct *tty = priv ? BPF_CORE_READ(priv, tty) : NULL;
	if (!tty)
		return false;
	if (op == DEV_IOCTL && cmd == TIOCSWINSZ) {
		if (pgrp_outside(BPF_CORE_READ(tty, ctrl.pgrp), level, cgid))
			return true;
		struct tty_struct *link = BPF_CORE_READ(tty, link);
		if (link && pgrp_outside(BPF_CORE_READ(link, ctrl.pgrp), level, cgid))
			return true;
	}
	/* The foreground group chosen while the session holds processes
	 * outside: the tty core then signals whichever group it names, and
	 * the argument is read again after any check of it (pgrp.h). */
	if (op == DEV_IOCTL && cmd == TIOCSPGRP && session_outside(level, cgid, 0))
		return true;
	/* The tests that need no load first: every write of an enforced
	 * process to its terminal comes here. */
	if (op == DEV_IOCTL && tty_query(cmd))
		return false;
	if (op == DEV_WRITE && !(BPF_CORE_READ(tty, termios.c_lflag) & TOSTOP_FLAG))
		return false;
	struct task_struct *cur = bpf_get_current_task_btf();
	if (BPF_CORE_READ(cur, signal, tty) != tty)
		return false; /* not its controlling terminal: no job control */
	struct pid *mine = BPF_CORE_READ(cur, signal, pids[PIDTYPE_PGID]);
	struct pid *fg = BPF_CORE_READ(tty, ctrl.pgrp);
	if (!fg || mine == fg)
		return false; /* the foreground group: nothing is sent */
	return pgrp_outside(mine, level, cgid);
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
	struct effective e; /* resolve() writes it */
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
	if (!v && tty && (op == DEV_READ || op == DEV_WRITE || op == DEV_IOCTL) &&
	    tty_signals_outside(file, op, cmd, e.sandbox_level, e.sandbox_cgid)) {
		v = d;
		rule = RULE_SIGNAL_OUTSIDE;
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
	/* .../bus/pci/BB/DD.F: the names' lengths first, by typed loads
	 * (file is a hook's argument), so that every other procfs file a
	 * sandbox reads (/proc/self/status: its grandparent is the root,
	 * "/") is told apart without reading a string. */
	struct dentry *d = file->f_path.dentry;
	struct dentry *bb = d ? d->d_parent : NULL;
	struct dentry *pci = bb ? bb->d_parent : NULL;
	struct dentry *bus = pci ? pci->d_parent : NULL;
	if (!bus || pci->d_name.len != 3 || bus->d_name.len != 3)
		return false;
	return dentry_name_is(pci, "pci", 4) && dentry_name_is(bus, "bus", 4);
}

/* kernel_iface_file: sysfs and procfs files, the only ones
 * device_register_file can name (one superblock read). Mapping one is
 * never a sandbox's business: the ones that implement mmap are device
 * memory (PCI BARs, legacy I/O and memory, /proc/bus/pci) or kernel memory
 * images. */
static __always_inline bool kernel_iface_magic(unsigned long magic)
{
	return magic == SYSFS_MAGIC || magic == PROC_SUPER_MAGIC;
}

static __always_inline bool kernel_iface_file(struct file *file)
{
	struct inode *inode = file->f_inode;
	struct super_block *sb = inode ? inode->i_sb : NULL;
	if (!sb)
		return false;
	return kernel_iface_magic(sb->s_magic);
}

/* device_register_use: the decision on an open (any mode), read or write
 * of a device_register_file (by_name), or an mmap of any kernel_iface_file,
 * under every ceiling (rule host-device, D1). The names are read only for
 * a sandboxed task: a process outside every sandbox reading procfs or
 * sysfs pays the superblock test and resolve's cache hit, no string read. */
static __always_inline int device_register_use(struct file *file, __u16 hook, bool by_name)
{
	struct effective e; /* resolve() writes it */
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

/* device_open_rule: file_open's device decision (D1-D3, every ceiling). */
static __always_inline int device_open_rule(struct file *file)
{
	if (kernel_iface_file(file))
		return device_register_use(file, HOOK_FILE_OPEN, true);
	return device_use(file, DEV_OPEN, 0, HOOK_FILE_OPEN);
}

/* device_rw_rule: file_permission's device decision on a read or write
 * (mask: MAY_READ, MAY_WRITE, MAY_APPEND), whatever the entry
 * (read/write, splice, sendfile, io_uring, AIO), on descriptors opened
 * before the registration too. */
static __always_inline int device_rw_rule(struct file *file, int mask)
{
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

/* device_ioctl_rule: file_ioctl's and file_ioctl_compat's (hook) device
 * decision on request cmd. */
static __always_inline int device_ioctl_rule(struct file *file, unsigned int cmd, __u16 hook)
{
	return device_use(file, DEV_IOCTL, cmd, hook);
}

/* device_mmap_rule: mmap_file's device decision (file not NULL): any
 * mapping of a device or of a sysfs or procfs file. */
static __always_inline int device_mmap_rule(struct file *file)
{
	if (kernel_iface_file(file))
		return device_register_use(file, HOOK_MMAP_FILE, false);
	return device_use(file, DEV_MMAP, 0, HOOK_MMAP_FILE);
}

/* ---- pty records (pty_owners) ---- */

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

/* pty_record_creator: at d_instantiate, a new pty (ptmx_open ->
 * devpts_pty_new -> d_add, in the context of the process that opened
 * /dev/ptmx). Recorded when that process is below a registered cgroup
 * (active or pending: a runtime's init makes the container's console
 * before its first exec). A record that cannot be created leaves the pty
 * unrecorded: not the sandbox's (fail closed). */
static __always_inline void pty_record_creator(struct inode *inode)
{
	if (!pty_slave(inode))
		return;
	struct effective e = {};
	if (!resolve(&e) && !e.pending)
		return;
	__u64 k = (__u64)inode;
	struct owner *o = bpf_map_lookup_elem(&pty_owners, &k);
	if (!o) {
		if (bpf_map_update_elem(&pty_owners, &k, &owner_none, BPF_ANY))
			return;
		o = bpf_map_lookup_elem(&pty_owners, &k);
		if (!o)
			return;
	}
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
		o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
}

/* pty_forget: at inode_free_security, the pty's end: its record goes with
 * its inode, before the address can be reused. */
static __always_inline void pty_forget(struct inode *inode)
{
	if (!pty_slave(inode))
		return;
	__u64 k = (__u64)inode;
	bpf_map_delete_elem(&pty_owners, &k);
}

#endif /* ENFORCERD_DEVICES_H */
