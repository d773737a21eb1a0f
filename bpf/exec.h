/* SPDX-License-Identifier: GPL-2.0 */
/*
 * State shared by the shell ceiling (exec.bpf.c) and the write ceiling
 * (file.bpf.c): which processes run write-denied because they were started
 * by exec under shell=read_only, which inodes a sandbox wrote, and which
 * files a shell=none sandbox may exec.
 */
#ifndef ENFORCERD_EXEC_H
#define ENFORCERD_EXEC_H

#include "enforcerd.h"

/* task_flags values */
#define TASK_EXEC_WRITE_DENIED (1U << 0)  /* started by exec under read_only */
#define TASK_EXEC_WRITE_AUDITED (1U << 1) /* same, audit-only ceiling */

/* Per-task flags; copied to every task it creates (task_alloc). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} task_flags SEC(".maps");

/* Inodes an enforced process opened for write: under shell=none/read_only,
 * such files may not be executed ("files the sandbox could have written"). */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64); /* id of the sandbox cgroup that wrote it */
} written_inodes SEC(".maps");

/* shell=none allow list: (registered cgroup, file identity). Filled by
 * enforcer.Register (--exec-allow) and by the entrypoint exec. */
struct exec_key {
	__u64 cgroup_id;
	__u64 ino;
	__u32 dev; /* kernel dev_t of the inode's superblock */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct exec_key);
	__type(value, __u8);
} exec_allow SEC(".maps");

/* task_write_denied adds the write denial of a process started by exec
 * under shell=read_only (only while some ceiling still applies to it). */
static __always_inline void task_write_denied(struct effective *e)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 *f = bpf_task_storage_get(&task_flags, t, 0, 0);
	if (!f)
		return;
	if (*f & TASK_EXEC_WRITE_DENIED) {
		e->deny |= DENY_WRITE;
		if (!e->deny_cgid[1])
			e->deny_cgid[1] = e->deny_cgid[3] ? e->deny_cgid[3] : e->sandbox_cgid;
	} else if (*f & TASK_EXEC_WRITE_AUDITED) {
		e->audit |= DENY_WRITE;
		if (!e->audit_cgid[1])
			e->audit_cgid[1] = e->audit_cgid[3] ? e->audit_cgid[3] : e->sandbox_cgid;
	}
}

#endif /* ENFORCERD_EXEC_H */
