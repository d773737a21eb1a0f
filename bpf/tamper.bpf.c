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
 *  - no TIOCSTI/TIOCLINUX terminal injection (X3).
 *
 * "Outside" is decided on the target's cgroup object: the sandbox is the
 * subtree of the deepest registered ancestor of the current task.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "enforcerd.h"

char LICENSE[] SEC("license") = "GPL";

#define CGROUP2_SUPER_MAGIC 0x63677270
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

static __always_inline int tamper(struct effective *e, __u16 hook,
				  __u32 kind, __u64 target)
{
	int v = verdict(e, DENY_TAMPER);
	if (!v)
		return 0;
	struct event *ev = event_begin(e, hook, v, DENY_TAMPER, EPERM);
	if (ev) {
		ev->object_kind = kind;
		ev->ino = target;
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
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
	if (!task_outside(&e, child))
		return 0;
	return tamper(&e, HOOK_PTRACE_ACCESS_CHECK, OBJ_TASK, BPF_CORE_READ(child, tgid));
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

/*
 * E2: write permission on a cgroup.procs/cgroup.threads file of a cgroup
 * outside the sandbox. The kernel asks for it on the common ancestor of
 * source and destination for every migration (write to cgroup.procs, and
 * clone3 with CLONE_INTO_CGROUP), so a move out of the subtree is refused.
 * Cheap checks first: this hook runs on every path walk step.
 */
SEC("lsm/inode_permission")
int BPF_PROG(inode_permission, struct inode *inode, int mask, int ret)
{
	if (ret)
		return ret;
	if (!(mask & MAY_WRITE))
		return 0;
	if (BPF_CORE_READ(inode, i_sb, s_magic) != CGROUP2_SUPER_MAGIC)
		return 0;
	struct kernfs_node *kn = BPF_CORE_READ(inode, i_private);
	if (!kn)
		return 0;
	char name[16] = {};
	bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(kn, name));
	bool procs = streq(name, "cgroup.procs", 13);
	bool threads = streq(name, "cgroup.threads", 15);
	if (!procs && !threads)
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	struct kernfs_node *dir = kn_parent(kn);
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

/* E4: removing or replacing a pin (anything on a bpf filesystem). */
static __always_inline int deny_bpffs(struct dentry *d)
{
	if (BPF_CORE_READ(d, d_sb, s_magic) != BPF_FS_MAGIC)
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	struct event *ev;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	ev = event_begin(&e, HOOK_BPFFS_UNLINK, v, DENY_TAMPER, EPERM);
	if (ev) {
		ev->object_kind = OBJ_FILE;
		ev->ino = BPF_CORE_READ(d, d_inode, i_ino);
		bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN,
					  BPF_CORE_READ(d, d_name.name));
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

SEC("lsm/inode_unlink")
int BPF_PROG(tamper_inode_unlink, struct inode *dir, struct dentry *dentry,
	     int ret)
{
	if (ret)
		return ret;
	return deny_bpffs(dentry);
}

SEC("lsm/inode_rename")
int BPF_PROG(tamper_inode_rename, struct inode *old_dir,
	     struct dentry *old_dentry, struct inode *new_dir,
	     struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(old_dentry))
		return -EPERM;
	return deny_bpffs(new_dentry);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(tamper_inode_rmdir, struct inode *dir, struct dentry *dentry,
	     int ret)
{
	if (ret)
		return ret;
	return deny_bpffs(dentry);
}

/* X3: injecting input into a terminal. */
SEC("lsm/file_ioctl")
int BPF_PROG(tamper_file_ioctl, struct file *file, unsigned int cmd,
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
