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
 * enforcer.Register (--exec-allow) and by the entrypoint exec, which also
 * adds (cgroup, ino 0, dev 0): the entrypoint is taken (exec.bpf.c
 * pending_exec). */
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
		e->write_roots |= WR_DENY_TOTAL; /* no writable roots for it */
		if (!e->deny_cgid[1])
			e->deny_cgid[1] = e->deny_cgid[3] ? e->deny_cgid[3] : e->sandbox_cgid;
	} else if (*f & TASK_EXEC_WRITE_AUDITED) {
		e->audit |= DENY_WRITE;
		e->write_roots |= WR_AUDIT_TOTAL;
		if (!e->audit_cgid[1])
			e->audit_cgid[1] = e->audit_cgid[3] ? e->audit_cgid[3] : e->sandbox_cgid;
	}
}

/* exec_event: the record and verdict of a refused exec (hook
 * HOOK_BPRM_CHECK_SECURITY, rule RULE_FIELD) or code mapping (the mapping
 * hook, RULE_CODE_MAPPING). */
static __always_inline int exec_event(struct effective *e, int v, __u32 bit,
				      struct file *f, struct inode *inode,
				      __u16 hook, __u32 rule)
{
	record_event(e, hook, v, bit, {
		set_rule(ev, rule);
		fill_inode(ev, inode);
		fill_names(ev, BPF_CORE_READ(f, f_path.dentry));
	});
	return verdict_ret(v);
}

/*
 * ceiling_since: for each registered cgroup, the time of its registration
 * (CLOCK_REALTIME nanoseconds, read from the kernel's coarse clock that
 * stamps inode times, after one tick has passed: enforcer.Register).
 * Under shell=none/read_only a file whose inode changed at or after that
 * time counts as written by the sandbox.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64);   /* cgroup id */
	__type(value, __u64); /* registration time, ns since the epoch */
} ceiling_since SEC(".maps");

/* restrict_since: the earliest registration time over the active
 * ancestors whose shell ceiling restricts exec (the meet: the oldest
 * registration sees the most files as written). Fail direction: an
 * ancestor without a time gives 0, so every file counts as written. One
 * level per bpf_loop() callback, like the ancestor walk. */
struct since_ctx {
	__u64 since;
};

static long since_level(__u32 level, void *ctx)
{
	struct since_ctx *s = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id)
		return 1;
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c || (c->flags & CEILING_PENDING) ||
	    !(c->deny & (DENY_SHELL | DENY_SHELL_WRITE)))
		return 0;
	__u64 *t = bpf_map_lookup_elem(&ceiling_since, &id);
	if (!t) {
		s->since = 0;
		return 1;
	}
	if (*t < s->since)
		s->since = *t;
	return 0;
}

static __always_inline __u64 restrict_since(void)
{
	struct since_ctx s = {.since = ~0ULL};
	bpf_loop(MAX_CGROUP_LEVEL, since_level, &s, 0);
	return s.since;
}

#include "ctime.h" /* inode_ctime_ns */

/* ctime_local: filesystems whose inode times this kernel sets itself (an
 * allow list). On FUSE, NFS, SMB, 9p, virtiofs, ... a server sets them. */
static __always_inline bool ctime_local(__u64 magic)
{
	switch (magic) {
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
	case SQUASHFS_MAGIC:
	case EROFS_SUPER_MAGIC_V1:
	case F2FS_SUPER_MAGIC:
	case ISOFS_SUPER_MAGIC:
	case ZFS_SUPER_MAGIC:
	case BCACHEFS_SUPER_MAGIC:
		return true;
	}
	return false;
}

/*
 * changed_since_registration: X4, decided on persistent state only. Every
 * change of a file's data or metadata (write, truncate, mmap write-back,
 * chmod, link, xattr) sets its ctime, which the sandbox cannot set back
 * (utimes sets atime/mtime only; CAP_SYS_TIME is refused) and which
 * survives eviction of the in-memory inode (unlike inode storage: a DAX
 * flag toggle, memory.reclaim or memory pressure drop it). The registration
 * time is rounded down to the filesystem's timestamp granularity (1 s on
 * ext4 with small inodes) so a truncated ctime is still "after". Files on
 * filesystems with server-set times count as changed. Changes by processes
 * outside after registration (a package upgrade) count too: such files
 * cannot be executed by the sandbox until it is registered again.
 */
static __always_inline bool changed_since_registration(struct inode *inode)
{
	struct super_block *sb = BPF_CORE_READ(inode, i_sb);
	if (!sb || !ctime_local(BPF_CORE_READ(sb, s_magic)))
		return true;
	__u64 since = restrict_since();
	__u32 gran = BPF_CORE_READ(sb, s_time_gran);
	if (gran > 1 && gran <= 1000000000)
		since -= since % gran;
	return inode_ctime_ns(inode) >= (__s64)since;
}

/* exec_restricted_file: a memfd / kernel-internal file, a file an enforced
 * process wrote (inode mark: kept by tmpfs/ramfs for the file's lifetime),
 * or one changed since registration (ctime: every other filesystem). */
static __always_inline bool exec_restricted_file(struct file *f)
{
	int mnt_flags = BPF_CORE_READ(f, f_path.mnt, mnt_flags);
	if (mnt_flags & MNT_INTERNAL)
		return true;
	struct inode *inode = f->f_inode;
	if (!inode)
		return true;
	if (bpf_inode_storage_get(&written_inodes, inode, 0, 0))
		return true;
	return changed_since_registration(inode);
}

/* deny_code_mapping: under shell=none/read_only, mapping a memfd or a file
 * the sandbox wrote executable is exec by other means (the dynamic loader,
 * or a hand-written one). */
static __always_inline int deny_code_mapping(struct effective *e, struct file *f,
					      __u16 hook)
{
	int none = verdict(e, DENY_SHELL);
	int ro = verdict(e, DENY_SHELL_WRITE);
	if (!none && !ro)
		return 0;
	if (!exec_restricted_file(f))
		return 0;
	__u32 bit = none ? DENY_SHELL : DENY_SHELL_WRITE;
	int v = none == DECISION_DENIED || ro == DECISION_DENIED ? DECISION_DENIED : DECISION_AUDITED;
	return exec_event(e, v, bit, f, f->f_inode, hook, RULE_CODE_MAPPING);
}

#endif /* ENFORCERD_EXEC_H */
