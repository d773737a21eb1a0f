//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Escape and tamper (threat model E1-E4, X3), for every enforced process
 * whatever its ceiling: every registration implies DENY_TAMPER (resolve()).
 *
 *  - no bpf() at all (E3: list/update/delete our maps, detach links);
 *  - no ptrace, /proc/<pid>/mem or process_vm_writev on, and no signal to,
 *    a process outside the sandbox (E4: the daemon, the host);
 *  - no leaving the cgroup subtree (E2): cgroup.procs/cgroup.threads writes
 *    outside it and clone3(CLONE_INTO_CGROUP) outside it both need
 *    MAY_WRITE on a cgroup.procs file outside the subtree (the kernel's
 *    cgroup_procs_write_permission), checked at inode_permission;
 *  - no mount, umount, remount, move_mount or pivot_root;
 *  - no unlink/rename of anything on a bpf filesystem (E4: our pins);
 *  - no TIOCSTI/TIOCLINUX terminal injection (X3), native (file.bpf.c's
 *    file_ioctl) or compat ioctl;
 *  - no write to a cgroup file or directory outside the subtree (cgroup.kill,
 *    freeze, limits, mkdir), to cgroup v1, or to kernel tunables that run
 *    code outside the sandbox (/proc/sys: core_pattern, modprobe; sysrq;
 *    sysfs: uevent_helper; securityfs, debugfs, tracefs, configfs, efivarfs);
 *  - no F_SETOWN of a descriptor to another process (SIGIO/SIGURG signals);
 *  - no capability that administers the kernel itself (CAP_SYS_ADMIN: mount,
 *    mount_setattr, fsopen/fsmount; CAP_SYS_MODULE, CAP_SYS_RAWIO,
 *    CAP_SYS_BOOT, CAP_MAC_*, CAP_BPF, CAP_PERFMON, and CAP_DAC_READ_SEARCH
 *    for open_by_handle_at), in every user namespace.
 *
 * "Outside" is decided on the target's cgroup object: the sandbox is the
 * subtree of the deepest registered ancestor of the current task.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "exec.h"

char LICENSE[] SEC("license") = "GPL";

#define CGROUP2_SUPER_MAGIC 0x63677270
#define CGROUP_SUPER_MAGIC 0x27e0eb
#define SYSFS_MAGIC 0x62656572
#define SECURITYFS_MAGIC 0x73636673
#define DEBUGFS_MAGIC 0x64626720
#define TRACEFS_MAGIC 0x74726163
#define CONFIGFS_MAGIC 0x62656570
#define EFIVARFS_MAGIC 0xde5e81e4
#define PSTOREFS_MAGIC 0x6165676c
#define BINFMTFS_MAGIC 0x42494e4d
#define BPF_FS_MAGIC 0xcafe4a11
#define TIOCSTI 0x5412
#define TIOCLINUX 0x541C

/* kernfs_node.parent was renamed __parent in Linux 6.15. */
struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(struct kernfs_node___old, parent))
		return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
	return BPF_CORE_READ(kn, __parent);
}

/* streq compares n bytes (including the terminating NUL). */
static __always_inline bool streq(const char *a, const char *b, int n)
{
	for (int i = 0; i < n && i < 16; i++) {
		if (a[i] != b[i])
			return false;
	}
	return true;
}

static __always_inline bool task_outside(struct effective *e,
					 struct task_struct *p)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	return !cgroup_in_subtree(cg, e->sandbox_level, e->sandbox_cgid);
}

/* E3 */
SEC("lsm/bpf")
int BPF_PROG(bpf, int cmd, union bpf_attr *attr, unsigned int size, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_BPF, OBJ_BPF_CMD, cmd);
}

/* Linux 6.9+ added a bool kernel argument; the loader picks the variant
 * matching the kernel's BTF. */
SEC("lsm/bpf")
int BPF_PROG(bpf_v4, int cmd, union bpf_attr *attr, unsigned int size,
	     bool kernel, int ret)
{
	if (ret)
		return ret;
	if (kernel)
		return 0; /* in-kernel users (e.g. a light skeleton), not a process */
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_BPF, OBJ_BPF_CMD, cmd);
}

/* E4: ptrace attach/peek/poke, /proc/<pid>/mem, process_vm_writev. */
SEC("lsm/ptrace_access_check")
int BPF_PROG(ptrace_access_check, struct task_struct *child, unsigned int mode,
	     int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (task_outside(&e, child))
		return tamper(&e, HOOK_PTRACE_ACCESS_CHECK, OBJ_TASK, BPF_CORE_READ(child, tgid));
	/* shell=read_only: a write-denied process (started by exec) may not
	 * ptrace or write the memory of one that may write (the entrypoint),
	 * which would turn it into a writer. */
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 *cf = bpf_task_storage_get(&task_flags, cur, 0, 0);
	if (!cf || !(*cf & (TASK_EXEC_WRITE_DENIED | TASK_EXEC_WRITE_AUDITED)))
		return 0;
	__u32 cflags = *cf;
	__u32 *tf = bpf_task_storage_get(&task_flags, child, 0, 0);
	if (tf && (*tf & TASK_EXEC_WRITE_DENIED))
		return 0;
	int v = (cflags & TASK_EXEC_WRITE_DENIED) ? DECISION_DENIED : DECISION_AUDITED;
	struct event *ev = event_begin(&e, HOOK_PTRACE_ACCESS_CHECK, v, DENY_SHELL_WRITE, EPERM);
	if (ev) {
		ev->object_kind = OBJ_TASK;
		ev->ino = BPF_CORE_READ(child, tgid);
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

/* E4: PTRACE_TRACEME hands control to a parent outside the sandbox. */
SEC("lsm/ptrace_traceme")
int BPF_PROG(ptrace_traceme, struct task_struct *parent, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, parent))
		return 0;
	return tamper(&e, HOOK_PTRACE_TRACEME, OBJ_TASK, BPF_CORE_READ(parent, tgid));
}

/* E4: kill, tgkill, sigqueue, pidfd_send_signal to a process outside. */
SEC("lsm/task_kill")
int BPF_PROG(task_kill, struct task_struct *p, struct kernel_siginfo *info,
	     int sig, const struct cred *cred, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, p))
		return 0;
	return tamper(&e, HOOK_TASK_KILL, OBJ_TASK, BPF_CORE_READ(p, tgid));
}

/* proc_write_denied: /proc/sys (any sysctl: core_pattern and modprobe run
 * helpers outside the sandbox) and /proc/sysrq-trigger. */
static __always_inline bool proc_write_denied(struct inode *inode)
{
	struct proc_inode *pi = proc_inode_of(inode);
	if (BPF_CORE_READ(pi, sysctl))
		return true;
	struct proc_dir_entry *pde = BPF_CORE_READ(pi, pde);
	if (!pde)
		return false;
	char name[16] = {};
	bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(pde, name));
	return streq(name, "sysrq-trigger", 14);
}

/*
 * E2/E4 at inode_permission(MAY_WRITE), which every open for write, mkdir,
 * and every cgroup migration passes:
 *  - cgroup2: a file or directory of a cgroup outside the sandbox subtree.
 *    The kernel asks for write permission on the common ancestor's
 *    cgroup.procs for every migration (write to cgroup.procs, clone3 with
 *    CLONE_INTO_CGROUP), so a move out of the subtree is refused, and so
 *    are cgroup.kill/cgroup.freeze/limits of outside cgroups;
 *  - kernel tunables and pseudo filesystems that act outside the sandbox.
 * Cheap checks first: this hook runs on every path walk step.
 */
SEC("lsm/inode_permission")
int BPF_PROG(inode_permission, struct inode *inode, int mask, int ret)
{
	if (ret)
		return ret;
	if (!(mask & MAY_WRITE))
		return 0;
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return 0;
	__u64 magic = sb->s_magic;
	switch (magic) {
	case CGROUP2_SUPER_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case SECURITYFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case CONFIGFS_MAGIC:
	case EFIVARFS_MAGIC:
	case PSTOREFS_MAGIC:
	case BINFMTFS_MAGIC: /* binfmt_misc: registers interpreters run for
			      * every exec on the host */
		break;
	default:
		return 0;
	}
	/* Unenforced processes stop here, before any procfs reads. */
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (magic == PROC_SUPER_MAGIC && !proc_write_denied(inode)) {
		/* /proc/<pid>/... of a process outside (oom_score_adj,
		 * coredump_filter, attr, ...): E4. Other procfs files: allow. */
		struct pid *ppid = proc_pid_of(inode);
		if (!ppid)
			return 0;
		struct task_struct *target = pid_task_of(ppid);
		if (!target || !task_outside(&e, target))
			return 0;
		return tamper(&e, HOOK_PROC_WRITE, OBJ_TASK, BPF_CORE_READ(target, tgid));
	}
	if (magic != CGROUP2_SUPER_MAGIC)
		return tamper(&e, HOOK_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	struct kernfs_node *kn = BPF_CORE_READ(inode, i_private);
	if (!kn)
		return tamper(&e, HOOK_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	/* A cgroup directory's kernfs node carries the cgroup; a file's
	 * parent does. */
	struct kernfs_node *dir = kn;
	__u32 fmt = BPF_CORE_READ(inode, i_mode) & S_IFMT;
	if (fmt != 0040000)
		dir = kn_parent(kn);
	struct cgroup *cg = BPF_CORE_READ(dir, priv);
	if (cgroup_in_subtree(cg, e.sandbox_level, e.sandbox_cgid))
		return 0;
	return tamper(&e, HOOK_INODE_PERMISSION, OBJ_CGROUP, BPF_CORE_READ(dir, id));
}

static __always_inline int deny_mount(__u16 hook)
{
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, hook, OBJ_MOUNT, 0);
}

SEC("lsm/sb_mount")
int BPF_PROG(sb_mount, const char *dev_name, const struct path *path,
	     const char *type, unsigned long flags, void *data, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_MOUNT);
}

SEC("lsm/sb_umount")
int BPF_PROG(sb_umount, struct vfsmount *mnt, int flags, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_UMOUNT);
}

SEC("lsm/sb_remount")
int BPF_PROG(sb_remount, struct super_block *sb, void *mnt_opts, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_REMOUNT);
}

SEC("lsm/move_mount")
int BPF_PROG(move_mount, const struct path *from_path,
	     const struct path *to_path, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_MOVE_MOUNT);
}

SEC("lsm/sb_pivotroot")
int BPF_PROG(sb_pivotroot, const struct path *old_path,
	     const struct path *new_path, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_PIVOTROOT);
}

/* X3 through the 32-bit compat ioctl entry (Linux 6.7+ has its own hook;
 * older kernels pass compat ioctls through file_ioctl). Optional hook. */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(tamper_file_ioctl_compat, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (cmd != TIOCSTI && cmd != TIOCLINUX)
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_TTY_IOCTL, OBJ_NONE, cmd);
}

#define F_SETOWN 8
#define F_SETOWN_EX 15
#define F_OWNER_TID 0
#define F_OWNER_PID 1

/* E4: F_SETOWN/F_SETOWN_EX make the kernel signal (SIGIO, SIGURG, or any
 * F_SETSIG signal) another process or process group on I/O. Only the
 * caller itself may be the owner. Fail direction: an unreadable
 * f_owner_ex is denied. */
SEC("lsm/file_fcntl")
int BPF_PROG(file_fcntl, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (cmd != F_SETOWN && cmd != F_SETOWN_EX)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, tgid = pid_tgid >> 32;
	long owner = (int)arg;
	if (cmd == F_SETOWN_EX) {
		struct {
			int type;
			int pid;
		} ex = {};
		if (bpf_probe_read_user(&ex, sizeof(ex), (void *)arg) < 0)
			owner = -1;
		else if (ex.type == F_OWNER_TID || ex.type == F_OWNER_PID)
			owner = ex.pid;
		else
			owner = -1; /* process group */
	}
	if (owner == 0 || owner == tgid || owner == tid)
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_FILE_FCNTL, OBJ_TASK, owner);
}

#define CAP_DAC_READ_SEARCH 2
#define CAP_NET_ADMIN 12
#define CAP_SYS_TIME 25
#define CAP_SYS_TTY_CONFIG 26
#define CAP_MKNOD 27
#define CAP_SYSLOG 34
#define CAP_SYS_MODULE 16
#define CAP_SYS_RAWIO 17
#define CAP_SYS_ADMIN 21
#define CAP_SYS_BOOT 22
#define CAP_MAC_OVERRIDE 32
#define CAP_MAC_ADMIN 33
#define CAP_PERFMON 38
#define CAP_BPF 39
#define CAP_OPT_NOAUDIT (1U << 1)

static __always_inline bool admin_cap(int cap)
{
	switch (cap) {
	case CAP_DAC_READ_SEARCH:
	case CAP_NET_ADMIN: /* interfaces, routes, firewall of the host */
	case CAP_SYS_TIME:  /* the host clock */
	case CAP_SYS_TTY_CONFIG: /* vhangup of a terminal shared with the host */
	case CAP_MKNOD:	    /* device nodes: raw disks bypass every inode */
	case CAP_SYSLOG:    /* kernel log, kptr */
	case CAP_SYS_MODULE:
	case CAP_SYS_RAWIO:
	case CAP_SYS_ADMIN:
	case CAP_SYS_BOOT:
	case CAP_MAC_OVERRIDE:
	case CAP_MAC_ADMIN:
	case CAP_PERFMON:
	case CAP_BPF:
		return true;
	}
	return false;
}

/* Mount, remount, mount_setattr, fsopen/fsmount, module loading, raw I/O,
 * open_by_handle_at: the capabilities that administer the kernel, refused
 * in every user namespace (a user namespace the child creates gives it
 * CAP_SYS_ADMIN there). */
SEC("lsm/capable")
int BPF_PROG(capable, const struct cred *cred, struct user_namespace *ns,
	     int cap, unsigned int opts, int ret)
{
	if (ret)
		return ret;
	if (!admin_cap(cap))
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	if (!(opts & CAP_OPT_NOAUDIT)) {
		struct event *ev = event_begin(&e, HOOK_CAPABLE, v, DENY_TAMPER, EPERM);
		if (ev) {
			ev->object_kind = OBJ_CAPABILITY;
			ev->ino = cap;
			bpf_ringbuf_submit(ev, 0);
		}
	}
	return verdict_ret(v);
}

/* Usermode helpers: a module autoload (request_module: netdev-*, net-pf-*,
 * key-type-*, fs-*, ...) runs modprobe as root outside every sandbox, with
 * whatever the host's modprobe path names. Enforced processes never trigger
 * one. */
SEC("lsm/kernel_module_request")
int BPF_PROG(kernel_module_request, char *kmod_name, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	struct event *ev;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	ev = event_begin(&e, HOOK_KERNEL_MODULE_REQUEST, v, DENY_TAMPER, EPERM);
	if (ev) {
		ev->object_kind = OBJ_FILE;
		bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN, kmod_name);
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

/* E4: a signal the kernel sends on I/O (SIGIO/SIGURG or F_SETSIG) from an
 * enforced process's I/O to a process outside, however its owner was set
 * (fcntl F_SETOWN, ioctl FIOSETOWN/SIOCSPGRP, or before the ceiling). */
SEC("lsm/file_send_sigiotask")
int BPF_PROG(file_send_sigiotask, struct task_struct *tsk,
	     struct fown_struct *fown, int sig, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, tsk))
		return 0;
	return tamper(&e, HOOK_TASK_KILL, OBJ_TASK, BPF_CORE_READ(tsk, tgid));
}

/* E4: nice, I/O priority, scheduling policy and CPU affinity of a process
 * outside (setpriority, ioprio_set, sched_setscheduler/setattr/setaffinity). */
static __always_inline int deny_task_outside(struct task_struct *p)
{
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, p))
		return 0;
	return tamper(&e, HOOK_TASK_SETSCHED, OBJ_TASK, BPF_CORE_READ(p, tgid));
}

SEC("lsm/task_setnice")
int BPF_PROG(task_setnice, struct task_struct *p, int nice, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p);
}

SEC("lsm/task_setioprio")
int BPF_PROG(task_setioprio, struct task_struct *p, int ioprio, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p);
}

SEC("lsm/task_setscheduler")
int BPF_PROG(task_setscheduler, struct task_struct *p, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p);
}

#define LSM_PRLIMIT_WRITE 2

/* E4: prlimit(2) on another process. The hook names credentials, not the
 * process, so an enforced process may change only its own limits
 * (prlimit(0, ...)/setrlimit never reach this hook). */
SEC("lsm/task_prlimit")
int BPF_PROG(task_prlimit, const struct cred *cred, const struct cred *tcred,
	     unsigned int flags, int ret)
{
	if (ret)
		return ret;
	if (!(flags & LSM_PRLIMIT_WRITE))
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_TASK_SETSCHED, OBJ_NONE, 0);
}
