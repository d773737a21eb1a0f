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

static __always_inline int exec_event(struct effective *e, int v, __u32 bit,
				      struct file *f, struct inode *inode)
{
	struct event *ev = event_begin(e, HOOK_BPRM_CHECK_SECURITY, v, bit, EPERM);
	if (ev) {
		ev->object_kind = OBJ_FILE;
		ev->dev = BPF_CORE_READ(inode, i_sb, s_dev);
		ev->ino = BPF_CORE_READ(inode, i_ino);
		ev->mode = BPF_CORE_READ(inode, i_mode);
		struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
		for (int i = 0; i < EVENT_NAMES; i++) {
			if (!d)
				break;
			const unsigned char *name = BPF_CORE_READ(d, d_name.name);
			bpf_probe_read_kernel_str(ev->names[i], EVENT_NAME_LEN, name);
			struct dentry *parent = BPF_CORE_READ(d, d_parent);
			if (parent == d)
				break;
			d = parent;
		}
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

#define PROT_EXEC 0x4

/* exec_restricted_file: a memfd / kernel-internal file, or one an enforced
 * process wrote. */
static __always_inline bool exec_restricted_file(struct file *f)
{
	int mnt_flags = BPF_CORE_READ(f, f_path.mnt, mnt_flags);
	if (mnt_flags & MNT_INTERNAL_FLAG)
		return true;
	struct inode *inode = f->f_inode;
	return inode && bpf_inode_storage_get(&written_inodes, inode, 0, 0);
}

/* deny_code_mapping: under shell=none/read_only, mapping a memfd or a file
 * the sandbox wrote executable is exec by other means (the dynamic loader,
 * or a hand-written one). */
static __always_inline int deny_code_mapping(struct effective *e, struct file *f)
{
	int none = verdict(e, DENY_SHELL);
	int ro = verdict(e, DENY_SHELL_WRITE);
	if (!none && !ro)
		return 0;
	if (!exec_restricted_file(f))
		return 0;
	__u32 bit = none ? DENY_SHELL : DENY_SHELL_WRITE;
	int v = none == DECISION_DENIED || ro == DECISION_DENIED ? DECISION_DENIED : DECISION_AUDITED;
	return exec_event(e, v, bit, f, f->f_inode);
}

#endif /* ENFORCERD_EXEC_H */
