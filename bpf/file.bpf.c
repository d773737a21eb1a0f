//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * write=false at BPF LSM file and inode hooks (README "What is enforced"):
 * no modification of any inode on any filesystem, by any path: open for write
 * or O_TRUNC, truncate, create, mkdir, rmdir, unlink, rename (incl.
 * RENAME_EXCHANGE), link, symlink, mknod, chmod, chown, utimes, xattrs and
 * POSIX ACLs, shared writable mmap, and writes through descriptors that were
 * open before the ceiling applied (file_permission runs on every write).
 *
 * Writes to pipes, sockets, the null-like devices and terminals (which of
 * them the sandbox may use at all: devices.h) and files on
 * kernel-internal mounts (memfd, anonymous inodes) stay allowed: they modify
 * no filesystem. So do the sandbox's own POSIX semaphores and shared memory
 * objects in its registered shm directory (shm.h: created, written, mapped,
 * truncated, linked within it and unlinked), IPC objects like its message
 * queues; those made outside are refused there under every ceiling.
 *
 * The device and terminal allow list of every ceiling (devices.h, D1-D4)
 * runs in this object's file_open, file_permission, file_ioctl,
 * file_ioctl_compat and mmap_file programs, after their own checks: one
 * program per hook.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "exec.h"
#include "net.h"
#include "roots.h"
#include "mqueue.h"
#include "shm.h"
#include "fifo.h"
#include "devices.h"
#include "sigio.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * W9: chr_write_allowed: the character devices that pass the write ceiling
 * (writes and ioctls under write=false), an allow list kept as a second
 * layer behind devices.h's rules, which decide under every ceiling which
 * devices are usable at all (D1-D4): those that store nothing (null,
 * zero, full, random, urandom) and terminals (/dev/tty, console, ptmx, pty
 * slaves, virtual consoles, serial lines), of which only the sandbox's own
 * (declared, or created from /dev/ptmx) get past devices.h. Every other
 * character device is a channel to something outside: raw disks (sg, bsg,
 * NVMe generic), uinput (keystrokes into the host's session), vcs (the
 * host's consoles), fuse, tun, ...
 */
static __always_inline bool chr_write_allowed(__u32 rdev)
{
	__u32 maj = MAJOR(rdev), min = MINOR(rdev);
	if (maj == MEM_MAJOR)
		return min == MEM_NULL_MINOR || min == MEM_ZERO_MINOR ||
		       min == MEM_FULL_MINOR || min == MEM_RANDOM_MINOR ||
		       min == MEM_URANDOM_MINOR;
	if (maj == TTYAUX_MAJOR)
		return min <= TTYAUX_PTMX_MINOR; /* /dev/tty, /dev/console, /dev/ptmx */
	/* virtual consoles and serial lines (4), UNIX98 pty slaves (136-143):
	 * terminals; injecting input into them (TIOCSTI, TIOCLINUX) is
	 * refused under every ceiling, their screen memory (vcs, major 7) is
	 * not on this list. */
	return maj == TTY_MAJOR ||
	       (maj >= UNIX98_PTY_SLAVE_MAJOR && maj <= UNIX98_PTY_SLAVE_MAJOR_LAST);
}

/* N7: chr_network: character devices that are network interfaces or carry
 * packets to one (network=false): tun/tap (misc 200), vhost-net (238),
 * vhost-vsock (241), ppp (major 108). Devices with dynamic numbers
 * (vhost-vdpa) are outside this list; under write=false they are denied as
 * any unlisted device. */
static __always_inline bool chr_network(__u32 rdev)
{
	__u32 maj = MAJOR(rdev), min = MINOR(rdev);
	if (maj == PPP_MAJOR)
		return true;
	return maj == MISC_MAJOR &&
	       (min == TUN_MINOR || min == VHOST_NET_MINOR || min == VHOST_VSOCK_MINOR);
}

/* inode_exempt: objects whose "write" modifies no filesystem: pipes
 * (FIFOs), sockets (the network ceiling decides on them) and the allow
 * list of character devices. */
static __always_inline bool inode_exempt(struct inode *inode)
{
	if (!inode)
		return false; /* fail closed: unknown object is a file */
	/* Direct (BTF) loads on hot paths: no helper call. */
	__u32 fmt = inode->i_mode & S_IFMT;
	if (fmt == S_IFIFO || fmt == S_IFSOCK)
		return true;
	return fmt == S_IFCHR && chr_write_allowed(inode->i_rdev);
}

/* file_exempt_magic: file_exempt for a caller that has read file's
 * inode and the inode's superblock's s_magic (0 without either). */
static __always_inline bool file_exempt_magic(struct file *file, struct inode *inode,
					      unsigned long magic)
{
	if (inode_exempt(inode))
		return true;
	/* /proc/<pid>/... files are process state, not a filesystem's: the
	 * write ceiling leaves them alone (tamper.bpf.c keeps a sandbox off
	 * processes outside it and off every other procfs file). */
	if (inode && proc_pid_of(inode, magic))
		return true;
	struct vfsmount *mnt = file->f_path.mnt;
	return mnt && (mnt->mnt_flags & MNT_INTERNAL) != 0;
}

/* file_exempt adds files on kernel-internal mounts (MNT_INTERNAL: memfd,
 * SysV shm, anon inodes), which no path in any mount namespace reaches. */
static __always_inline bool file_exempt(struct file *file)
{
	struct inode *inode = file->f_inode;
	struct super_block *sb = inode ? inode->i_sb : NULL;
	return file_exempt_magic(file, inode, sb ? sb->s_magic : 0);
}

/* roots_lift_target: whether writable roots may lift a write denial on d:
 * a name in a directory (parent), or an inode a filesystem stores. Never a
 * device node (R10): its writes and ioctls reach the device, not the
 * directory it sits in, so the W9 allow list decides wherever it is (a
 * container's /dev, a root above devtmpfs). Unreadable: no. */
static __always_inline bool roots_lift_target(struct dentry *d, bool parent)
{
	if (parent)
		return true;
	struct inode *inode = d->d_inode; /* BTF loads: d is a hook's or file's */
	if (!inode)
		return false;
	__u32 fmt = inode->i_mode & S_IFMT;
	return fmt != S_IFCHR && fmt != S_IFBLK;
}

/* What may lift a write denial on one target (write_verdict's lift). */
enum write_lift {
	LIFT_ROOTS = 1U << 0, /* writable roots: the operation changes nothing but d */
	LIFT_SHM = 1U << 1,   /* d is the sandbox's own POSIX shm object (shm.h):
			       * writing, mapping, truncating its contents */
	LIFT_ALL = LIFT_ROOTS | LIFT_SHM,
};

/* write_verdict: the write ceiling's decision on a write to d (see
 * roots_verdict for mnt and parent): none when the ceiling allows writes;
 * else, when lift has LIFT_ROOTS and d is a target roots may lift, the
 * decision of the ancestors with writable roots (roots.h); else the write
 * verdict itself. Either denial is lifted when lift has LIFT_SHM and d is
 * an own shm object. Both are lifts, so their order changes no verdict:
 * the roots come first, because a write beneath a root is the common case
 * and its decision cache answers it, while the shm test costs a hash
 * lookup on every file of a tmpfs (shm_on_dir). */
static __always_inline int write_verdict(struct effective *e, struct dentry *d,
					 struct vfsmount *mnt, bool parent, __u32 lift)
{
	int v = verdict(e, DENY_WRITE);
	if (!v)
		return 0;
	if ((lift & LIFT_ROOTS) && roots_apply(e) && roots_lift_target(d, parent)) {
		v = roots_check(d, mnt, parent, v);
		/* An audit-only ancestor without roots still audits. */
		if (!v && (e->audit & DENY_WRITE) && (e->seen & WR_AUDIT_TOTAL))
			v = DECISION_AUDITED;
		if (!v)
			return 0;
	}
	if ((lift & LIFT_SHM) && !parent && shm_own_plain(e, d))
		return 0;
	return v;
}

/* The operations on names the shm rule (shm.h) decides on. */
enum shm_name_op {
	SHM_OP_NONE = 0,
	SHM_OP_CREATE, /* a: the new name; mode: its file type */
	SHM_OP_UNLINK, /* a: the name removed */
	SHM_OP_LINK,   /* a: the source, b: the new name */
	SHM_OP_RENAME, /* a: the source, b: the target (replaced if positive) */
};

/* shm_names: the shm rule's decision on an operation on names: 0 the
 * write ceiling decides, 1 allowed (an own object, a regular file created
 * in the shm directory itself), or the refusal of an object made outside
 * (every ceiling). A link's new name must be in the shm directory itself:
 * the kernel keeps it on the same superblock (EXDEV), this keeps it out of
 * its subdirectories. */
static __always_inline int shm_names(struct effective *e, int op, struct dentry *a,
				     struct dentry *b, __u32 mode, __u16 hook)
{
	int k;
	switch (op) {
	case SHM_OP_CREATE:
		return (mode & S_IFMT) == S_IFREG && shm_mode_plain(mode) &&
		       shm_is_dir(e, a->d_parent);
	case SHM_OP_UNLINK:
		k = shm_kind_dentry(e, a);
		if (k == SHM_OUTSIDE)
			return shm_outside(e, a->d_inode, hook);
		return k == SHM_OWN;
	case SHM_OP_LINK:
		k = shm_kind_dentry(e, a);
		if (k == SHM_OUTSIDE)
			return shm_outside(e, a->d_inode, hook);
		return k == SHM_OWN && shm_own_plain(e, a) && b && shm_is_dir(e, b->d_parent);
	case SHM_OP_RENAME:
		if (shm_kind_dentry(e, a) == SHM_OUTSIDE)
			return shm_outside(e, a->d_inode, hook);
		if (b && shm_kind_dentry(e, b) == SHM_OUTSIDE)
			return shm_outside(e, b->d_inode, hook);
		return 0;
	}
	return 0;
}

/* deny_write_names: the common body of the inode_* hooks on names. a (and
 * b, when not NULL) are the dentries the operation changes; pa (pb): the
 * change is to the name, so the parent directory must be writable (create,
 * unlink, rename, ...), else the inode itself (link's source). shm_op and
 * mode: what the shm rule decides first (shm_names). */
static __always_inline int deny_write_names(struct dentry *a, bool pa,
					    struct dentry *b, bool pb, __u16 hook,
					    int shm_op, __u32 mode)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (shm_op) {
		int s = shm_names(&e, shm_op, a, b, mode, hook);
		if (s < 0)
			return s;
		if (s > 0)
			return 0;
	}
	task_write_denied(&e);
	int v = write_verdict(&e, a, NULL, pa, LIFT_ROOTS);
	struct dentry *at = a;
	if (b && v != DECISION_DENIED && roots_apply(&e)) {
		int r = roots_check(b, NULL, pb, verdict(&e, DENY_WRITE));
		if (r == DECISION_DENIED || (r && !v)) {
			v = r;
			at = b;
		}
	}
	if (!v)
		return 0;
	record_event(&e, hook, v, DENY_WRITE, fill_dentry(ev, at));
	return verdict_ret(v);
}

/* deny_write_dentry: a change of the name d in its parent directory. */
static __always_inline int deny_write_dentry(struct dentry *d, __u16 hook)
{
	return deny_write_names(d, true, NULL, false, hook, SHM_OP_NONE, 0);
}

/* dentry_internal: pseudo files that no path reaches (anonymous pipes,
 * sockets from socket(2), memfds): a dentry that is its own parent without
 * being its filesystem's root, on a superblock only the kernel mounted. */
static __always_inline bool dentry_internal(struct dentry *d)
{
	struct super_block *sb = d->d_sb;
	if (d->d_parent != d || !sb || sb->s_root == d)
		return false;
	return (sb->s_flags & SB_KERNMOUNT) != 0;
}

/* W8: metadata changes (mode, owner, times, size, xattrs, ACLs) are writes for
 * every inode type: a socket, FIFO or device node with a path is changed
 * like a file (chmod 0777 of a container engine's socket opens it to every
 * local user). Only pseudo files without a path are exempt. A POSIX shm
 * object made outside is refused under every ceiling (shm.h); lift: what
 * may lift the write denial (write_verdict). */
static __always_inline int deny_modify_dentry(struct dentry *d, struct vfsmount *mnt,
					      __u16 hook, __u32 lift)
{
	if (dentry_internal(d))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (shm_kind_dentry(&e, d) == SHM_OUTSIDE) {
		int r = shm_outside(&e, d->d_inode, hook);
		if (r)
			return r;
	}
	task_write_denied(&e);
	int v = write_verdict(&e, d, mnt, false, lift);
	if (!v)
		return 0;
	record_event(&e, hook, v, DENY_WRITE, fill_dentry(ev, d));
	return verdict_ret(v);
}

/*
 * deny_write_file: the common body of hooks with a struct file. When the
 * write is allowed and mark is set, an inode written under a restricted
 * shell is marked (written_inodes) so it cannot be executed afterwards:
 * through a descriptor opened before the ceiling, a shared mapping, or open.
 */
/* deny_write_file_e: the body, for a caller that resolved e (found) and
 * checked file_exempt already. */
static __always_inline int deny_write_file_e(struct effective *e, struct file *file,
					     __u16 hook, bool mark, __u32 lift)
{
	task_write_denied(e);
	int v = write_verdict(e, file->f_path.dentry, file->f_path.mnt, false, lift);
	__u32 bit = DENY_WRITE;
	if (!v || v == DECISION_AUDITED) {
		/* X5: under a restricted shell, mark the inode written. tmpfs and
		 * ramfs do not update ctime for writes through a shared
		 * mapping, and their inodes (hence the mark) live as long as
		 * the file; on other filesystems the ctime rule of exec.h
		 * decides even after the mark is evicted. A mark that cannot
		 * be created denies the write (never fail open). */
		if (mark && ((e->deny | e->audit) & (DENY_SHELL | DENY_SHELL_WRITE))) {
			__u64 *w = bpf_inode_storage_get(&written_inodes, file->f_inode, 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (w) {
				*w = e->sandbox_cgid;
			} else if (e->deny & (DENY_SHELL | DENY_SHELL_WRITE)) {
				v = DECISION_DENIED;
				bit = e->deny & DENY_SHELL ? DENY_SHELL : DENY_SHELL_WRITE;
			}
		}
		if (!v)
			return 0;
	}
	record_event(e, hook, v, bit, {
		fill_inode(ev, BPF_CORE_READ(file, f_inode));
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

/* lift: writable roots may allow it (the operation changes only the file
 * named, see write_verdict). */
static __always_inline int deny_write_file(struct file *file, __u16 hook,
					   bool mark, __u32 lift)
{
	if (file_exempt(file))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return deny_write_file_e(&e, file, hook, mark, lift);
}


/* E4: removing or replacing a pin (anything on a bpf filesystem), for every
 * enforced process whatever its write ceiling. */
static __always_inline int deny_bpffs(struct dentry *d, __u16 hook)
{
	struct super_block *sb = d->d_sb;
	if (!sb || sb->s_magic != BPF_FS_MAGIC)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	record_event(&e, hook, v, DENY_TAMPER, {
		set_rule(ev, RULE_PIN_REMOVAL);
		ev->object_kind = OBJ_FILE;
		ev->ino = BPF_CORE_READ(d, d_inode, i_ino);
		bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN,
					  BPF_CORE_READ(d, d_name.name));
	});
	return verdict_ret(v);
}

/*
 * K2 (every ceiling): attributes of kernel interfaces. chmod/chown/utimes,
 * xattrs and ACLs on sysfs, procfs, securityfs, debugfs, tracefs, configfs,
 * efivarfs, pstore, binfmt_misc, bpffs (our pins) and cgroup filesystems
 * would hand a tunable, a pin or a cgroup file to other users or change who
 * may write it. Allowed: /proc/<pid> entries of the sandbox's own processes
 * and cgroups strictly below the registered one (the sandbox's own
 * sub-cgroups).
 */
static __always_inline int deny_kernel_attr(struct dentry *d, __u16 hook)
{
	struct inode *inode = d->d_inode;
	if (!inode)
		return 0;
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return 0;
	__u64 magic = sb->s_magic;
	if (!kernel_fs_magic(magic) && magic != BPF_FS_MAGIC)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (magic == PROC_SUPER_MAGIC) {
		struct pid *ppid = proc_pid_of(inode, magic);
		struct task_struct *target = ppid ? pid_task_of(ppid) : NULL;
		if (target && !task_outside(&e, target))
			return 0;
	}
	if (magic == CGROUP2_SUPER_MAGIC) {
		struct kernfs_node *file_kn;
		struct cgroup *cg = cgroup_of_kernfs_inode(inode, &file_kn);
		if (cgroup_in_subtree(cg, e.sandbox_level, e.sandbox_cgid) &&
		    BPF_CORE_READ(cg, level) > e.sandbox_level)
			return 0;
	}
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	record_event(&e, hook, v, DENY_TAMPER, {
		set_rule(ev, RULE_KERNEL_ATTR);
		fill_dentry(ev, d);
	});
	return verdict_ret(v);
}

/* deny_network_file: network=false for a file that is an inet socket or a
 * network-class device. */
static __always_inline int deny_network_file_e(struct effective *e, struct file *file,
					       __u16 hook)
{
	int v = verdict(e, DENY_NETWORK);
	if (!v)
		return 0;
	if (hook == HOOK_FILE_PERMISSION) {
		/* N8: read and write (splice, sendfile, io_uring) of an inet
		 * socket connected to a listed endpoint (endpoints.h). */
		struct inode *inode = file->f_inode;
		struct socket *sock = NULL;
		if (inode && (inode->i_mode & S_IFMT) == S_IFSOCK)
			sock = bpf_sock_from_file(file);
		if (sock) {
			v = inet_peer_decision(e, v, sock);
			if (!v)
				return 0;
		}
	}
	record_event(e, hook, v, DENY_NETWORK, {
		fill_inode(ev, file->f_inode);
		struct inode *inode = file->f_inode;
		if (inode && (inode->i_mode & S_IFMT) == S_IFSOCK) {
			struct socket *sock = (struct socket *)BPF_CORE_READ(file, private_data);
			ev->object_kind = OBJ_SOCKET;
			ev->family = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
			ev->sock_type = BPF_CORE_READ(sock, type);
		}
	});
	return verdict_ret(v);
}

static __always_inline int deny_network_file(struct file *file, __u16 hook)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return deny_network_file_e(&e, file, hook);
}

/* network_file: an inet (any family but AF_UNIX) socket, or a
 * network-class character device. Fail direction: a socket whose family
 * cannot be read is not AF_UNIX. */
static __always_inline bool network_file(struct file *file, struct inode *inode)
{
	__u32 fmt = inode->i_mode & S_IFMT;
	if (fmt == S_IFCHR)
		return chr_network(inode->i_rdev);
	if (fmt != S_IFSOCK)
		return false;
	/* The kernel's own test (f_op is the socket's), and typed loads:
	 * every read and write of a socket on the host passes here. */
	struct socket *sock = bpf_sock_from_file(file);
	if (!sock)
		return true;
	struct sock *sk = sock->sk;
	return !sk || sk->__sk_common.skc_family != AF_UNIX;
}

/* K5: deny_raw_storage (every ceiling): the SCSI generic driver (/dev/sg*)
 * takes SCSI commands through write(2); raw disk writes bypass every inode
 * check. */
static __always_inline int deny_raw_storage_e(struct effective *e, struct file *file,
					      __u16 hook)
{
	int v = verdict(e, DENY_TAMPER);
	if (!v)
		return 0;
	record_event(e, hook, v, DENY_TAMPER, {
		set_rule(ev, RULE_RAW_STORAGE);
		fill_inode(ev, file->f_inode);
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

static __always_inline int deny_raw_storage(struct file *file, __u16 hook)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return deny_raw_storage_e(&e, file, hook);
}

/* streq16: buf (NUL-terminated, 16 bytes) equals the literal lit of n
 * bytes, NUL included. */
static __always_inline bool streq16(const char *buf, const char *lit, int n)
{
	for (int i = 0; i < n && i < 16; i++) {
		if (buf[i] != lit[i])
			return false;
	}
	return true;
}

/*
 * K1/E4: proc_pid_write_allowed, the allow list of /proc/<pid>/... files a
 * sandboxed process may write (on its own processes: deny_kernel_write
 * refuses those of processes outside): each acts on that process alone.
 * Everything else is refused, whatever a kernel adds next: comm (the task
 * name, text the kernel copies into the host's log: comm.h), autogroup (the
 * session's nice level, shared with processes outside), loginuid (the
 * host's audit trail), fault injection, latency and scheduler statistics.
 */
static __always_inline bool proc_pid_write_allowed(struct file *file)
{
	char buf[16] = {};
	bpf_probe_read_kernel_str(buf, sizeof(buf),
				  BPF_CORE_READ(file, f_path.dentry, d_name.name));
	return streq16(buf, "oom_score_adj", 14) || streq16(buf, "oom_adj", 8) ||
	       streq16(buf, "coredump_filter", 16) ||
	       streq16(buf, "clear_refs", 11) || streq16(buf, "mem", 4) ||
	       streq16(buf, "uid_map", 8) || streq16(buf, "gid_map", 8) ||
	       streq16(buf, "projid_map", 11) || streq16(buf, "setgroups", 10) ||
	       streq16(buf, "timens_offsets", 15) || streq16(buf, "timerslack_ns", 14) ||
	       /* attr/: the process's own LSM labels */
	       streq16(buf, "current", 8) || streq16(buf, "exec", 5) ||
	       streq16(buf, "fscreate", 9) || streq16(buf, "keycreate", 10) ||
	       streq16(buf, "sockcreate", 11);
}

/* K8, N11: a descriptor crossing into an enforced process (SCM_RIGHTS,
 * pidfd_getfd) is decided as opening it would be, for the objects whose
 * later use passes no hook that decides it: a POSIX message queue made
 * outside (mq_timedsend and mq_timedreceive reach no LSM hook) and, under
 * network=false, a named FIFO made outside (its reads and writes are
 * decided as a pipe's). Descriptors inherited at registration are the
 * launcher's to choose (threat model). */
SEC("lsm/file_receive")
int BPF_PROG(file_receive, struct file *file, int ret)
{
	if (ret)
		return ret;
	if ((ret = mqueue_outside(file->f_inode, HOOK_FILE_RECEIVE))) /* mqueue.h */
		return ret;
	return fifo_outside(file, HOOK_FILE_RECEIVE); /* fifo.h */
}

/* W2/W5: open for write or with O_TRUNC (O_RDONLY|O_TRUNC truncates), by
 * open(2), openat2, or io_uring IORING_OP_OPENAT alike. N7: any open of a
 * network-class device under network=false. K5, every ceiling: block
 * devices for write (raw disk writes change files below every inode check,
 * ctime included) and SCSI generic devices. */
static __always_inline int file_open_rules(struct file *file)
{
	int ret;
	if ((ret = mqueue_outside(file->f_inode, HOOK_FILE_OPEN))) /* mqueue.h */
		return ret;
	if ((ret = shm_open_verdict(file->f_inode, HOOK_FILE_OPEN))) /* shm.h */
		return ret;
	if ((ret = fifo_outside(file, HOOK_FILE_OPEN))) /* fifo.h: N11 */
		return ret;
	struct inode *inode = file->f_inode;
	__u32 fmode = file->f_mode;
	__u32 fflags = file->f_flags;
	if (inode && (inode->i_mode & S_IFMT) == S_IFBLK && (fmode & FMODE_WRITE))
		return deny_raw_storage(file, HOOK_FILE_OPEN);
	if (inode && (inode->i_mode & S_IFMT) == S_IFCHR) {
		__u32 rdev = inode->i_rdev;
		if (MAJOR(rdev) == SCSI_GENERIC_MAJOR)
			return deny_raw_storage(file, HOOK_FILE_OPEN);
		if (chr_network(rdev)) {
			int r = deny_network_file(file, HOOK_FILE_OPEN);
			if (r)
				return r;
		}
	}
	/* An open for exec: the program of an exec, or an ELF's program
	 * interpreter (exec.h exec_open). The backing file an overlayfs
	 * opens beneath it is the same open, checked on the overlay's file. */
	if (((fflags | fmode) & FMODE_EXEC) && !(fmode & FMODE_NOACCOUNT))
		return exec_open(file);
	if (!(fmode & FMODE_WRITE) && !(fflags & O_TRUNC))
		return 0;
	return deny_write_file(file, HOOK_FILE_OPEN, true, LIFT_ALL);
}

/* file_open_slow: every rule of file_open, for what open_needs_no_rule
 * does not let through. A static subprogram (bpf-to-bpf call): the
 * program below then needs no stack and no callee-saved register (it runs
 * on every open of the host). Its frame (at most 256 bytes), resolve_slow's
 * (192), the walk's callback (32) and the program's own (32: the least a
 * frame counts) fill the verifier's combined stack limit of 512 exactly. */
static __noinline int file_open_slow(struct file *file)
{
	if (surely_unenforced()) /* every rule below returns 0 then */
		return 0;
	int ret = file_open_rules(file);
	if (ret)
		return ret;
	return device_open_rule(file); /* devices.h: D1-D3 */
}

/* no_rule_takes_sb: inode is on a superblock that none of the rules'
 * own superblock tests takes: not an mqueue (mqueue.h), not a mounted
 * tmpfs (shm_candidate_magic: the POSIX shm objects of shm.h), not sysfs
 * or procfs (kernel_iface_magic: devices.h). The superblock's magic is
 * read once: on 6.12 each read through the superblock pointer is a
 * guarded load (9 instructions of the JIT's around the load; on 6.1 every
 * BTF load is), and the three tests read it once each. */
static __always_inline bool no_rule_takes_sb(struct inode *inode)
{
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return true;
	unsigned long magic = sb->s_magic;
	return magic != MQUEUE_MAGIC && !shm_candidate_magic(sb, magic) && !kernel_iface_magic(magic);
}

/* open_needs_no_rule: an open that reaches no rule of file_open: a
 * regular file or directory opened neither for write, nor with O_TRUNC,
 * nor for exec, that none of the rules' own superblock tests takes
 * (mqueue_sb: mqueue.h; shm_candidate_sb: the POSIX shm objects of shm.h;
 * kernel_iface_file: devices.h). FIFOs and devices are neither regular
 * files nor directories. */
static __always_inline bool open_needs_no_rule(struct file *file)
{
	__u32 fmode = file->f_mode;
	__u32 fflags = file->f_flags;
	if ((fmode & FMODE_WRITE) || ((fflags | fmode) & FMODE_EXEC) || (fflags & O_TRUNC))
		return false;
	struct inode *inode = file->f_inode;
	if (!inode)
		return false;
	__u32 fmt = inode->i_mode & S_IFMT;
	if (fmt != S_IFREG && fmt != S_IFDIR)
		return false;
	return no_rule_takes_sb(inode);
}

SEC("lsm/file_open")
int BPF_PROG(file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	if (open_needs_no_rule(file))
		return 0;
	return file_open_slow(file);
}

/* W4/W5: every write through a descriptor, including ones opened before the
 * ceiling applied, io_uring IORING_OP_WRITE, splice, copy_file_range,
 * fallocate and reflink (all pass rw_verify_area/security_file_permission).
 * N6: every read and write of a network device under network=false.
 * Sockets are socket_rw_rule's (below). inode: file's, fmt: its S_IFMT bits. */
static __always_inline int file_permission_rules(struct file *file, struct inode *inode,
						 __u32 fmt, int mask)
{
	bool write = (mask & (MAY_WRITE | MAY_APPEND)) != 0;
	bool special = fmt == S_IFSOCK || fmt == S_IFCHR || fmt == S_IFBLK;
	/* Read once (a guarded load: see proc_pid_of) for every
	 * write rule below. No more values live across resolve(): this
	 * frame, resolve_slow's and the walk's callback fill the 6.1
	 * verifier's combined stack limit (512 bytes). */
	__u64 magic = 0;
	if (write && inode && !special) {
		struct super_block *sb = inode->i_sb;
		magic = sb ? sb->s_magic : 0;
	}
	bool kfs = magic && kernel_fs_magic(magic);
	/* Reads matter only on network devices here (sockets:
	 * socket_rw_rule): every other read (files, ttys, on the whole host)
	 * returns here, before any map lookup. */
	bool net = fmt == S_IFCHR && network_file(file, inode);
	if (!write && !net)
		return 0;
	/* Writes the write ceiling alone decides: pipes, memfds, ... exempt
	 * (asked here for files, after the rules below for the others). */
	if (!special && !kfs && file_exempt_magic(file, inode, magic))
		return 0;
	/* One effective ceiling for every check below (the 6.1 verifier's
	 * combined stack limit: one struct effective per frame). */
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int r;
	if (fmt == S_IFBLK) /* a write: reads returned above */
		return deny_raw_storage_e(&e, file, HOOK_FILE_PERMISSION);
	if (net) {
		r = deny_network_file_e(&e, file, HOOK_FILE_PERMISSION);
		if (r)
			return r;
	}
	if (fmt == S_IFCHR && write && inode->i_rdev == KMSG_RDEV)
		/* Every ceiling, every write path: the kernel log is the
		 * host's audit trail too; a sandbox writes no lines into it. */
		return tamper(&e, HOOK_FILE_PERMISSION, RULE_KMSG, OBJ_NONE, 0);
	if (magic == PROC_SUPER_MAGIC && !proc_pid_write_allowed(file)) {
		/* K1/E4: only /proc/<pid> files that act on that process
		 * alone; /proc/self/autogroup, for one, renices the whole
		 * session, processes outside included (task_setnice is asked
		 * only about the caller). */
		if (proc_pid_of(inode, magic))
			return tamper(&e, HOOK_FILE_PERMISSION, RULE_PROC_PID_FILE, OBJ_NONE, 0);
	}
	if (kfs) {
		/* Every ceiling: a write to a kernel interface through a
		 * descriptor opened outside and passed in (inode_permission
		 * decided only at open). */
		r = deny_kernel_write(&e, inode, magic, HOOK_FILE_PERMISSION);
		if (r)
			return r;
	}
	if (!write)
		return 0;
	/* A file that is neither was found not exempt above. */
	if (special ? file_exempt(file) : (kfs && file_exempt_magic(file, inode, magic)))
		return 0;
	return deny_write_file_e(&e, file, HOOK_FILE_PERMISSION, true, LIFT_ALL);
}

/* socket_rw_rule: file_permission on a socket file (inode: its inode).
 * The network ceiling alone decides (N4, N6, N8): a read or write of an
 * inet socket (inherited or passed in; read/write, splice, sendfile,
 * io_uring) under network=false unless its peer is a listed endpoint
 * (deny_network_file_e), and a write to a unix socket connected outside
 * the sandbox (sendfile and splice reach unix_stream_sendpage on 6.1
 * without socket_sendmsg). No other rule of file_permission takes a
 * socket: the write ceiling exempts it (inode_exempt), and it is neither
 * a device nor a kernel interface file (device_rw_rule). So a process
 * whose ceiling allows network returns at resolve_for, without the copy
 * of its answer. Called past the cgroup check (this_cpu_answer). */
static __always_inline int socket_rw_rule(struct file *file, struct inode *inode, int mask)
{
	/* A read matters only on an inet socket: the family first, then the
	 * answer. A write matters on both: the answer first (for a process
	 * whose ceiling allows network, all it pays here), then the family. */
	bool write = (mask & (MAY_WRITE | MAY_APPEND)) != 0;
	if (!write && !network_file(file, inode))
		return 0;
	struct effective e; /* resolve_for() writes it */
	if (!resolve_for(&e, DENY_NETWORK))
		return 0;
	if (!write || network_file(file, inode))
		return deny_network_file_e(&e, file, HOOK_FILE_PERMISSION);
	struct socket *sock = bpf_sock_from_file(file);
	return sock ? check_unix_peer_e(&e, sock, NULL, HOOK_FILE_PERMISSION, true) : 0;
}

/* file_permission_slow: every rule of file_permission, for what
 * read_needs_no_rule and this CPU's answer (this_cpu_answer: not 0) do
 * not let through. Inlined, unlike file_open's and
 * inode_permission's slow paths: a static subprogram's frame counts at
 * least 32 bytes against the verifier's combined stack limit (512), and
 * this chain (the rules' frame, resolve_slow's and the walk's callback)
 * uses all 512 already. */
static __always_inline int file_permission_slow(struct file *file, int mask, __u32 answer)
{
	struct inode *inode = file->f_inode;
	__u32 fmt = inode ? (inode->i_mode & S_IFMT) : 0;
	if (fmt == S_IFSOCK) {
		if (answer_allows(answer, DENY_NETWORK))
			return 0;
		return socket_rw_rule(file, inode, mask);
	}
	int ret = file_permission_rules(file, inode, fmt, mask);
	if (ret)
		return ret;
	return device_rw_rule(file, mask); /* devices.h: D1-D3 */
}

/* read_needs_no_rule: a read of file reaches no rule of file_permission:
 * not a socket (socket_rw_rule: an inet socket's reads), not a network
 * device (N6: the only file read-checked in file_permission_rules), not a
 * character or block device (devices.h), not a file kernel_iface_file
 * takes (device_rw_rule). A pipe is none of these, whatever its
 * superblock. */
static __always_inline bool read_needs_no_rule(struct file *file)
{
	struct inode *inode = file->f_inode;
	if (!inode)
		return true;
	__u32 fmt = inode->i_mode & S_IFMT;
	if (fmt == S_IFIFO)
		return true;
	if (fmt == S_IFSOCK || fmt == S_IFCHR || fmt == S_IFBLK)
		return false;
	struct super_block *sb = inode->i_sb;
	return !sb || !kernel_iface_magic(sb->s_magic);
}

SEC("lsm/file_permission")
int BPF_PROG(file_permission, struct file *file, int mask, int ret)
{
	if (ret)
		return ret;
	if (!(mask & (MAY_WRITE | MAY_APPEND)) && read_needs_no_rule(file))
		return 0;
	/* Every rule past here returns 0 where resolve() finds no
	 * registered ancestor: no filter of theirs for a process outside
	 * every sandbox (the writes, socket reads and device uses of the
	 * host). The file's type is not read before: every write on the
	 * host would pay its loads (guarded ones on 6.1). The answer goes on
	 * to the socket rules, which need its network bits alone. */
	__u32 answer = this_cpu_answer();
	if (answer == 0)
		return 0;
	return file_permission_slow(file, mask, answer);
}

/* W2: ftruncate on kernels >= 6.2 (security_file_truncate). Optional hook. */
SEC("lsm/file_truncate")
int BPF_PROG(file_truncate, struct file *file, int ret)
{
	if (ret)
		return ret;
	return deny_write_file(file, HOOK_FILE_TRUNCATE, false, LIFT_ALL);
}

/* W2: truncate(path), and ftruncate/O_TRUNC on kernels < 6.2. */
SEC("lsm/path_truncate")
int BPF_PROG(path_truncate, const struct path *path, int ret)
{
	if (ret)
		return ret;
	struct dentry *d = path->dentry;
	return deny_modify_dentry(d, path->mnt, HOOK_PATH_TRUNCATE, LIFT_ALL);
}

/* Shared writable mapping of a file (needs a writable descriptor, e.g. one
 * inherited from before the ceiling); under a restricted shell, an
 * executable mapping of a memfd or of a file the sandbox could have
 * written; N6: any mapping of an inet socket (TCP_ZEROCOPY_RECEIVE) or a
 * network device under network=false. */
static __always_inline int mmap_file_rules(struct file *file, unsigned long prot,
					   unsigned long flags)
{
	struct inode *inode = file->f_inode;
	if (inode && network_file(file, inode)) {
		int r = deny_network_file(file, HOOK_MMAP_FILE);
		if (r)
			return r;
	}
	/* Any mapping of a POSIX shm object made outside (shm.h), whoever
	 * opened the descriptor. */
	int sr = shm_open_verdict(inode, HOOK_MMAP_FILE);
	if (sr)
		return sr;
	if (prot & PROT_EXEC) {
		/* shell=none/read_only: no code from memfds or written files. */
		struct effective e = {};
		if (resolve(&e)) {
			int r = deny_code_mapping(&e, file, HOOK_MMAP_FILE);
			if (r)
				return r;
		}
	}
	if (!(prot & PROT_WRITE))
		return 0;
	if ((flags & MAP_TYPE) != MAP_SHARED && (flags & MAP_TYPE) != MAP_SHARED_VALIDATE)
		return 0;
	return deny_write_file(file, HOOK_MMAP_FILE, true, LIFT_ALL);
}

/* mmap_file_slow: every rule of mmap_file, for what mmap_needs_no_rule
 * does not let through. A static subprogram: the program below then needs
 * no stack and no callee-saved register. */
static __noinline int mmap_file_slow(struct file *file, unsigned long prot, unsigned long flags)
{
	if (surely_unenforced()) /* every rule below returns 0 then */
		return 0;
	int ret = mmap_file_rules(file, prot, flags);
	if (ret)
		return ret;
	return device_mmap_rule(file); /* devices.h: D1 */
}

/* mmap_needs_no_rule: a mapping no rule of mmap_file looks at: neither
 * executable (code mappings under a restricted shell) nor shared and
 * writable (the write ceiling), of a regular file that none of the rules'
 * own superblock tests takes (shm_candidate_sb: the POSIX shm objects of
 * shm.h; kernel_iface_file: devices.h). Sockets and devices are not
 * regular files. */
static __always_inline bool mmap_needs_no_rule(struct file *file, unsigned long prot,
					       unsigned long flags)
{
	if (prot & PROT_EXEC)
		return false;
	if ((prot & PROT_WRITE) &&
	    ((flags & MAP_TYPE) == MAP_SHARED || (flags & MAP_TYPE) == MAP_SHARED_VALIDATE))
		return false;
	struct inode *inode = file->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFREG)
		return false;
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return true;
	unsigned long magic = sb->s_magic; /* once: see no_rule_takes_sb */
	return !shm_candidate_magic(sb, magic) && !kernel_iface_magic(magic);
}

SEC("lsm/mmap_file")
int BPF_PROG(mmap_file, struct file *file, unsigned long reqprot,
	     unsigned long prot, unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!file)
		return 0;
	if (mmap_needs_no_rule(file, prot, flags))
		return 0;
	return mmap_file_slow(file, prot, flags);
}

/* mprotect(PROT_WRITE) of a shared file mapping made before the ceiling. */
SEC("lsm/file_mprotect")
int BPF_PROG(file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	     unsigned long prot, int ret)
{
	if (ret)
		return ret;
	struct file *file = vma->vm_file;
	if (!file)
		return 0;
	if (prot & PROT_EXEC) {
		struct effective e = {};
		if (resolve(&e)) {
			int r = deny_code_mapping(&e, file, HOOK_FILE_MPROTECT);
			if (r)
				return r;
		}
	}
	if (!(prot & PROT_WRITE))
		return 0;
	unsigned long vm_flags = BPF_CORE_READ(vma, vm_flags);
	if (!(vm_flags & VM_SHARED))
		return 0;
	return deny_write_file(file, HOOK_FILE_MPROTECT, true, LIFT_ALL);
}

/* W7: ioctl_read_only: the closed allow list of requests known not to modify
 * the file, its inode or its filesystem (descriptor flags, sizes, flags and
 * attribute reads, extent maps, verity and encryption status, terminal
 * queries so isatty() answers ENOTTY). Everything else is a write under
 * write=false: FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION,
 * FS_IOC_ENABLE_VERITY (seals the file), encryption policies, FICLONE,
 * FIDEDUPERANGE, EXT4_IOC_*, and whatever a kernel adds next. */
static __always_inline bool ioctl_read_only(unsigned int cmd)
{
	switch (cmd) {
	case FIGETBSZ:
	case HDIO_GETGEO:
	case BLKROGET:
	case BLKGETSIZE:
	case BLKSSZGET:
	case BLKIOMIN:
	case BLKIOOPT:
	case BLKALIGNOFF:
	case BLKPBSZGET:
	case BLKDISCARDZEROES:
	case BLKROTATIONAL:
	case BLKBSZGET:
	case BLKBSZGET_32:
	case BLKGETSIZE64:
	case BLKGETSIZE64_32:
	case TCGETS:
	case TCGETS2:
	case TIOCGPGRP:
	case TIOCGWINSZ:
	case FIONREAD:
	case FIONBIO:
	case FIONCLEX:
	case FIOCLEX:
	case FIOASYNC:
	case FIOQSIZE:
	case FS_IOC_GETFLAGS:
	case FS_IOC32_GETFLAGS:
	case FS_IOC_GETVERSION:
	case FS_IOC32_GETVERSION:
	case FS_IOC_FSGETXATTR:
	case FS_IOC_FIEMAP:
	case FS_IOC_MEASURE_VERITY:
	case FS_IOC_READ_VERITY_METADATA:
	case FS_IOC_GET_ENCRYPTION_POLICY:
	case FS_IOC_GET_ENCRYPTION_POLICY_EX:
	case FS_IOC_GET_ENCRYPTION_KEY_STATUS:
	case FS_IOC_GETFSLABEL:
	case FS_IOC_GETFSUUID:
	case FS_IOC_GETFSSYSFSPATH:
		return true;
	}
	return false;
}

/* K5: raw_passthrough (every ceiling): SCSI and NVMe command passthrough write
 * blocks below every filesystem check, whatever the descriptor's mode
 * (the CAP_SYS_RAWIO check some drivers make is not enough: bsg allows
 * WRITE commands on a descriptor opened for write). */
static __always_inline bool raw_passthrough(unsigned int cmd, struct inode *inode)
{
	switch (cmd) {
	case SG_IO:
	case CDROM_SEND_PACKET:
	case NVME_IOCTL_ADMIN_CMD:
	case NVME_IOCTL_SUBMIT_IO:
	case NVME_IOCTL_IO_CMD:
	case NVME_IOCTL_ADMIN64_CMD:
	case NVME_IOCTL_IO64_CMD:
	case NVME_IOCTL_IO64_CMD_VEC:
	case BLKDISCARD:
	case BLKSECDISCARD:
	case BLKZEROOUT:
		return true;
	case FIBMAP: /* SCSI_IOCTL_SEND_COMMAND on a device */
		if (!inode)
			return true;
		__u32 fmt = inode->i_mode & S_IFMT;
		return fmt == S_IFCHR || fmt == S_IFBLK;
	}
	return false;
}

/*
 * ioctl_decision (W6): one decision for the native and the 32-bit compat entry
 * (file_ioctl, and file_ioctl_compat on Linux >= 6.7; older kernels pass
 * compat requests, with their compat numbers, through file_ioctl).
 *  - every ceiling: I/O signals arranged (FIOSETOWN, SIOCSPGRP, FIOASYNC)
 *    are decided at delivery (sigio.h), no terminal
 *    injection (TIOCSTI, TIOCLINUX), no raw storage passthrough;
 *  - network=false: no ioctl on an inet socket or a network device;
 *  - write=false: only the closed read-only allow list, except on pipes,
 *    unix sockets, allow-listed character devices and pseudo files.
 */
static __always_inline int ioctl_decision(struct file *file, unsigned int cmd,
					  unsigned long arg, __u16 hook)
{
	if (cmd == FIOSETOWN || cmd == SIOCSPGRP || cmd == FIOASYNC) {
		int r = sigio_ioctl(file, cmd, arg, hook);
		if (r || cmd != FIOASYNC)
			return r;
	}
	if (cmd == TIOCSTI || cmd == TIOCLINUX || LEGACY_IOC(cmd, KD_IOC_BASE) ||
	    LEGACY_IOC(cmd, VT_IOC_BASE)) {
		/* X3: injecting input into a terminal, and the console and
		 * keyboard state of the host's virtual consoles (KD* keymaps,
		 * fonts and modes, VT_* switching) (every ceiling). */
		struct effective e; /* resolve() writes it */
		if (!resolve(&e))
			return 0;
		return tamper(&e, hook, RULE_TTY_INJECT, OBJ_NONE, cmd);
	}
	struct inode *inode = file->f_inode;
	if (raw_passthrough(cmd, inode))
		return deny_raw_storage(file, hook);
	if (inode && network_file(file, inode)) {
		int r = deny_network_file(file, hook);
		if (r)
			return r;
	}
	if (ioctl_read_only(cmd))
		return 0;
	/* R11: beneath a writable root, only the ioctls that change nothing
	 * but the file they are issued on (reflink into it: the source is
	 * only read). Others reach further than the hook sees: an extent
	 * swap (EXT4_IOC_MOVE_EXT, XFS_IOC_SWAPEXT, F2FS_IOC_MOVE_RANGE)
	 * rewrites a second file named by a descriptor in its argument. */
	return deny_write_file(file, hook, false,
			       cmd == FICLONE || cmd == FICLONERANGE ? LIFT_ROOTS : 0);
}

/* file_ioctl_slow: every rule of file_ioctl, for what ioctl_needs_no_rule
 * does not let through. A static subprogram: the program below then needs
 * no stack and no callee-saved register. */
static __noinline int file_ioctl_slow(struct file *file, unsigned int cmd, unsigned long arg)
{
	if (surely_unenforced()) /* every rule below returns 0 then */
		return 0;
	int ret = ioctl_decision(file, cmd, arg, HOOK_FILE_IOCTL);
	if (ret)
		return ret;
	return device_ioctl_rule(file, cmd, HOOK_FILE_IOCTL); /* devices.h: D1-D3 */
}

/* ioctl_needs_no_rule: the queries every program asks of its descriptors
 * (isatty's TCGETS, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, TIOCGWINSZ) on
 * a regular file, directory or FIFO: all are in ioctl_read_only and none
 * is one ioctl_decision decides before it (owners, terminal input, raw
 * storage); a regular file, directory or FIFO is neither a socket
 * (network_file) nor a device (devices.h). */
static __always_inline bool ioctl_needs_no_rule(struct file *file, unsigned int cmd)
{
	if (cmd != TCGETS && cmd != FIONREAD && cmd != FIONBIO && cmd != FIOCLEX &&
	    cmd != FIONCLEX && cmd != TIOCGWINSZ)
		return false;
	struct inode *inode = file->f_inode;
	if (!inode)
		return false;
	__u32 fmt = inode->i_mode & S_IFMT;
	return fmt == S_IFREG || fmt == S_IFDIR || fmt == S_IFIFO;
}

SEC("lsm/file_ioctl")
int BPF_PROG(file_ioctl, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (ioctl_needs_no_rule(file, cmd))
		return 0;
	return file_ioctl_slow(file, cmd, arg);
}

/* The 32-bit compat entry (int $0x80 / compat_sys_ioctl), Linux 6.7+.
 * Optional hook: older kernels call file_ioctl for compat requests. */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(file_ioctl_compat, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if ((ret = ioctl_decision(file, cmd, arg, HOOK_FILE_IOCTL_COMPAT)))
		return ret;
	return device_ioctl_rule(file, cmd, HOOK_FILE_IOCTL_COMPAT); /* devices.h: D1-D3 */
}

/* W1: every creation of a directory entry, by any syscall or io_uring op. */
SEC("lsm/inode_create")
int BPF_PROG(inode_create, struct inode *dir, struct dentry *dentry,
	     umode_t mode, int ret)
{
	if (ret)
		return ret;
	return deny_write_names(dentry, true, NULL, false, HOOK_INODE_CREATE, SHM_OP_CREATE, mode);
}

SEC("lsm/inode_link")
int BPF_PROG(inode_link, struct dentry *old_dentry, struct inode *dir,
	     struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	/* The source must be inside too: no outside file linked into a
	 * root (threat model R3). */
	if ((ret = deny_write_names(old_dentry, false, new_dentry, true, HOOK_INODE_LINK,
				    SHM_OP_LINK, 0)))
		return ret;
	fifo_link(); /* fifo.h: N11 */
	return 0;
}

SEC("lsm/inode_unlink")
int BPF_PROG(inode_unlink, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(dentry, HOOK_INODE_UNLINK))
		return -EPERM;
	if ((ret = mqueue_outside_dentry(dentry, HOOK_INODE_UNLINK))) /* mqueue.h */
		return ret;
	return deny_write_names(dentry, true, NULL, false, HOOK_INODE_UNLINK, SHM_OP_UNLINK, 0);
}

SEC("lsm/inode_symlink")
int BPF_PROG(inode_symlink, struct inode *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_SYMLINK);
}

SEC("lsm/inode_mkdir")
int BPF_PROG(inode_mkdir, struct inode *dir, struct dentry *dentry,
	     umode_t mode, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_MKDIR);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(inode_rmdir, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(dentry, HOOK_INODE_RMDIR))
		return -EPERM;
	return deny_write_dentry(dentry, HOOK_INODE_RMDIR);
}

/* mknod, mkfifo, and binding a unix socket to a path (it creates an inode). */
SEC("lsm/inode_mknod")
int BPF_PROG(inode_mknod, struct inode *dir, struct dentry *dentry,
	     umode_t mode, dev_t dev, int ret)
{
	if (ret)
		return ret;
	if ((ret = deny_write_dentry(dentry, HOOK_INODE_MKNOD)) == 0)
		fifo_mknod(dentry, mode); /* fifo.h: N11 */
	return ret;
}

/* rename and renameat2 (RENAME_EXCHANGE calls the hook for both sides). */
SEC("lsm/inode_rename")
int BPF_PROG(inode_rename, struct inode *old_dir, struct dentry *old_dentry,
	     struct inode *new_dir, struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(old_dentry, HOOK_INODE_RENAME) || deny_bpffs(new_dentry, HOOK_INODE_RENAME))
		return -EPERM;
	/* Both ends: nothing renamed into or out of a root (R4). Decided
	 * before the rename is counted, so this check may use the roots
	 * decision cache: nothing has moved yet. */
	int r = deny_write_names(old_dentry, true, new_dentry, true, HOOK_INODE_RENAME,
				 SHM_OP_RENAME, 0);
	/* A rename that may now happen and moves a directory, before it
	 * does: the roots decision cache (roots.h) is keyed by where
	 * directories are. Any other rename leaves it alone. */
	if (!r && rename_moves_directory(old_dentry, new_dentry))
		rename_begin(old_dentry, new_dentry);
	return r;
}

/* Every rename on the host that moves a directory, after it happened (or
 * failed): the second move of names_generation and the end of the rename
 * in progress (roots.h). Attached to the function every rename passes
 * (renameat2, io_uring, overlayfs, nfsd and ksmbd call it): no roots
 * decision is read from the cache or kept in it while a directory may be
 * moving. The same two ends as inode_rename saw (struct renamedata, Linux
 * 5.12 and later), so the same renames are counted and ended. */
SEC("fexit/vfs_rename")
int BPF_PROG(vfs_rename, struct renamedata *rd, int ret)
{
	if (rename_moves_directory(rd->old_dentry, rd->new_dentry))
		rename_end();
	return 0;
}

/* setattr_lift: what may lift a write denial on an attribute change: a
 * truncation (the size and the times and privilege bits it changes with
 * it) of an own POSIX shm object (shm.h: shm_open, then ftruncate), and
 * writable roots. chmod, chown and utimes of shm objects stay writes. */
static __always_inline __u32 setattr_lift(struct iattr *attr)
{
	__u32 valid = BPF_CORE_READ(attr, ia_valid);
	const __u32 trunc = ATTR_SIZE | ATTR_MTIME | ATTR_CTIME | ATTR_FORCE | ATTR_KILL_SUID |
			    ATTR_KILL_SGID | ATTR_FILE | ATTR_KILL_PRIV | ATTR_OPEN;
	if ((valid & ATTR_SIZE) && !(valid & ~trunc))
		return LIFT_ALL;
	return LIFT_ROOTS;
}

/* W3: chmod, chown, utimes (notify_change) and truncate's size change.
 * Linux 6.3 added a struct mnt_idmap * in front of the dentry; the loader
 * (enforcer) attaches the variant whose signature matches the kernel's BTF. */
SEC("lsm/inode_setattr")
int BPF_PROG(inode_setattr, struct mnt_idmap *idmap, struct dentry *dentry,
	     struct iattr *attr, int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_SETATTR);
	if (r)
		return r;
	if ((r = mqueue_outside_dentry(dentry, HOOK_INODE_SETATTR))) /* mqueue.h */
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_SETATTR, setattr_lift(attr));
}

SEC("lsm/inode_setattr")
int BPF_PROG(inode_setattr_pre63, struct dentry *dentry, struct iattr *attr,
	     int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_SETATTR);
	if (r)
		return r;
	if ((r = mqueue_outside_dentry(dentry, HOOK_INODE_SETATTR))) /* mqueue.h */
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_SETATTR, setattr_lift(attr));
}

/* W3: setxattr (6.1: also POSIX ACLs). The first argument is a struct
 * user_namespace * before 6.3 and a struct mnt_idmap * after; the position
 * of the dentry and the return value is the same. */
SEC("lsm/inode_setxattr")
int BPF_PROG(inode_setxattr, void *idmap, struct dentry *dentry,
	     const char *name, const void *value, size_t size, int flags,
	     int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_SETXATTR);
	if (r)
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_SETXATTR, LIFT_ROOTS);
}

/* W3: removexattr. */
SEC("lsm/inode_removexattr")
int BPF_PROG(inode_removexattr, void *idmap, struct dentry *dentry,
	     const char *name, int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_REMOVEXATTR);
	if (r)
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_REMOVEXATTR, LIFT_ROOTS);
}

/* W3: POSIX ACLs on kernels >= 6.2 (vfs_set_acl). Optional hook. */
SEC("lsm/inode_set_acl")
int BPF_PROG(inode_set_acl, struct mnt_idmap *idmap, struct dentry *dentry,
	     const char *acl_name, struct posix_acl *kacl, int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_SET_ACL);
	if (r)
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_SET_ACL, LIFT_ROOTS);
}

SEC("lsm/inode_remove_acl")
int BPF_PROG(inode_remove_acl, struct mnt_idmap *idmap, struct dentry *dentry,
	     const char *acl_name, int ret)
{
	if (ret)
		return ret;
	int r = deny_kernel_attr(dentry, HOOK_INODE_REMOVE_ACL);
	if (r)
		return r;
	return deny_modify_dentry(dentry, NULL, HOOK_INODE_REMOVE_ACL, LIFT_ROOTS);
}
