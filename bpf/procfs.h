/* SPDX-License-Identifier: GPL-2.0 */
/*
 * From kernel objects to the processes they describe: a /proc/<pid> inode's
 * struct pid, a struct pid's task. CO-RE reads only; NULL when there is
 * none.
 */
#ifndef ENFORCERD_PROCFS_H
#define ENFORCERD_PROCFS_H

#include "maps.h"

/* proc_inode_of: the struct proc_inode around a procfs inode. */
static __always_inline struct proc_inode *proc_inode_of(struct inode *inode)
{
	return (struct proc_inode *)((void *)inode -
				     bpf_core_field_offset(struct proc_inode, vfs_inode));
}

/* proc_pid_of: for a /proc/<pid>/... inode, the struct pid it describes;
 * NULL for every other procfs inode (and for non-procfs inodes). magic:
 * the s_magic of the inode's superblock, 0 without one, which the caller
 * has read (the superblock is a pointer the verifier does not trust, so
 * every load through it is a guarded one: read it once). */
static __always_inline struct pid *proc_pid_of(struct inode *inode, unsigned long magic)
{
	if (magic != PROC_SUPER_MAGIC)
		return NULL;
	return BPF_CORE_READ(proc_inode_of(inode), pid);
}

/* pid_task_of: the task a struct pid names (its PIDTYPE_PID task), NULL if
 * it has exited. */
static __always_inline struct task_struct *pid_task_of(struct pid *pid)
{
	struct hlist_node *first = BPF_CORE_READ(pid, tasks[0].first);
	if (!first)
		return NULL;
	return (struct task_struct *)((void *)first -
		bpf_core_field_offset(struct task_struct, pid_links));
}

/* current_pid_ns_level: the level of the current task's pid namespace (0:
 * the initial one, where pid numbers are the kernel's global ids). The
 * numbers a caller passes (setpgid, F_SETOWN) mean pids at this level. */
static __always_inline int current_pid_ns_level(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	return BPF_CORE_READ(t, thread_pid, level);
}

#endif /* ENFORCERD_PROCFS_H */
