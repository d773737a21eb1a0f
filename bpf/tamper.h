/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Escape and tamper decisions every object needs (every registration implies
 * DENY_TAMPER): what is outside the sandbox, the record of a tamper denial,
 * and writes to kernel interface files. The hooks are in tamper.bpf.c; file
 * and IPC hooks (file.bpf.c, ipc.bpf.c) reach the same decisions.
 */
#ifndef ENFORCERD_TAMPER_H
#define ENFORCERD_TAMPER_H

#include "event.h"
#include "kernfs.h"
#include "procfs.h"

/* task_outside: p's cgroup is not in the current sandbox's subtree. Fail
 * direction: anything unreadable is outside. */
static __always_inline bool task_outside(struct effective *e,
					 struct task_struct *p)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	return !cgroup_in_subtree(cg, e->sandbox_level, e->sandbox_cgid);
}

/* struct file embedded its fown_struct before Linux 6.12 and points to
 * one since. Field-existence checks on these flavours also match the
 * field's type, so exactly one of them relocates on a given kernel. */
struct file___owner_embedded {
	struct fown_struct f_owner;
} __attribute__((preserve_access_index));

struct file___owner_ptr {
	struct fown_struct *f_owner;
} __attribute__((preserve_access_index));

/* owner_outside: the descriptor's SIGIO/SIGURG owner (set by F_SETOWN or
 * FIOSETOWN, possibly before the ceiling) is a process outside the
 * sandbox: an early answer (sigio.h decides at delivery). A process group
 * is left to the delivery, which decides its members one by one. */
static __always_inline bool owner_outside(struct effective *e, struct file *file)
{
	struct fown_struct *fo;
	if (bpf_core_field_exists(struct file___owner_ptr, f_owner))
		fo = BPF_CORE_READ((struct file___owner_ptr *)file, f_owner);
	else if (bpf_core_field_exists(struct file___owner_embedded, f_owner))
		fo = (struct fown_struct *)((void *)file +
			bpf_core_field_offset(struct file___owner_embedded, f_owner));
	else
		return true; /* unknown layout: fail closed */
	if (!fo)
		return false; /* no owner was ever set */
	struct pid *pid = BPF_CORE_READ(fo, pid);
	if (!pid)
		return false;
	int type = BPF_CORE_READ(fo, pid_type);
	if (type != PIDTYPE_PID && type != PIDTYPE_TGID)
		return false;
	struct task_struct *t = pid_task_of(pid);
	return !t || task_outside(e, t);
}

/* tamper: the verdict and record for an escape/tamper attempt (every
 * registration implies DENY_TAMPER) at hook, decided by rule (enum
 * rule_id); target is the record's object_id, read as kind says (enum
 * object_kind). */
static __always_inline int tamper(struct effective *e, __u16 hook, __u32 rule,
				  __u32 kind, __u64 target)
{
	int v = verdict(e, DENY_TAMPER);
	if (!v)
		return 0;
	record_event(e, hook, v, DENY_TAMPER, {
		set_rule(ev, rule);
		ev->object_kind = kind;
		ev->object_id = target;
	});
	return verdict_ret(v);
}

/* kernel_fs_magic: filesystems whose files are kernel interfaces (tunables,
 * cgroups, pins, security policy), not storage. */
static __always_inline bool kernel_fs_magic(__u64 magic)
{
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
	case FUSECTL_SUPER_MAGIC:
	case SELINUX_MAGIC:
	case SMACK_MAGIC:
	case RDTGROUP_SUPER_MAGIC:
	case NFSD_MAGIC:
	case RPCAUTH_GSSMAGIC:
	case XENFS_SUPER_MAGIC:
	case FUNCTIONFS_MAGIC:
	case BINDERFS_SUPER_MAGIC:
		return true;
	}
	return false;
}

/*
 * deny_kernel_write: E2/E4/K1/K3, a write to a kernel interface file by an
 * enforced process, decided at inode_permission (every open for write,
 * mkdir, every cgroup migration) and again at file_permission (every write
 * through a descriptor, including one opened outside and passed in):
 *  - cgroup2: a file or directory of a cgroup outside the sandbox subtree.
 *    The kernel asks for write permission on the common ancestor's
 *    cgroup.procs for every migration (write to cgroup.procs, clone3 with
 *    CLONE_INTO_CGROUP), so a move out of the subtree is refused, and so
 *    are cgroup.kill/cgroup.freeze/limits of outside cgroups;
 *  - K3: the registered cgroup's own interface files: under cgroup v2
 *    delegation its resource files (memory.*, pids.*, cpu.*, io.*,
 *    cgroup.max.*, ...) belong to its parent; only cgroup.procs,
 *    cgroup.threads and cgroup.subtree_control are the sandbox's.
 *    Sub-cgroups the sandbox creates are entirely its own;
 *  - K1: procfs is an allow list: only /proc/<pid>/... of the sandbox's own
 *    processes (oom_score_adj, uid_map, attr, comm, ...). /proc/sys,
 *    sysrq-trigger, irq affinities, PCI configuration space (/proc/bus/pci),
 *    dynamic_debug, /proc/net and whatever a kernel adds next are denied;
 *  - every other kernel interface filesystem (kernel_fs_magic).
 */
static __always_inline int deny_kernel_write(struct effective *e, struct inode *inode,
					     __u64 magic, __u16 hook)
{
	if (magic == PROC_SUPER_MAGIC) {
		struct pid *ppid = proc_pid_of(inode, magic);
		if (!ppid)
			return tamper(e, hook, RULE_KERNEL_SETTING, OBJ_FSMAGIC, magic);
		struct task_struct *target = pid_task_of(ppid);
		if (!target)
			return 0; /* the process is gone: nothing to change */
		if (!task_outside(e, target))
			return 0;
		return tamper(e, hook, RULE_PROC_OUTSIDE, OBJ_TASK, BPF_CORE_READ(target, tgid));
	}
	if (magic != CGROUP2_SUPER_MAGIC)
		return tamper(e, hook, RULE_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	struct kernfs_node *file_kn;
	struct cgroup *cg = cgroup_of_kernfs_inode(inode, &file_kn);
	if (!cg)
		return tamper(e, hook, RULE_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	if (!cgroup_in_subtree(cg, e->sandbox_level, e->sandbox_cgid))
		return tamper(e, hook, RULE_CGROUP_OUTSIDE, OBJ_CGROUP, BPF_CORE_READ(cg, kn, id));
	if (!file_kn || BPF_CORE_READ(cg, level) > e->sandbox_level)
		return 0; /* a directory (mkdir below it), or a sub-cgroup */
	const char *name = BPF_CORE_READ(file_kn, name);
	if (name_is(name, "cgroup.procs", 13) || name_is(name, "cgroup.threads", 15) ||
	    name_is(name, "cgroup.subtree_control", 23))
		return 0;
	return tamper(e, hook, RULE_CGROUP_OWN_LIMITS, OBJ_CGROUP, BPF_CORE_READ(cg, kn, id));
}

#endif /* ENFORCERD_TAMPER_H */
