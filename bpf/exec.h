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
/* An exec under a restricted shell whose program passed
 * bprm_check_security: the next opens for exec are its interpreters (an
 * ELF's PT_INTERP, a script's), until bprm_committed_creds. Not inherited. */
#define TASK_EXEC_PROGRAM_CHECKED (1U << 2)
#define TASK_EXEC_INHERITED (TASK_EXEC_WRITE_DENIED | TASK_EXEC_WRITE_AUDITED)

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

/* shell=none allow list: (registered cgroup, file identity) -> enum
 * exec_allow_bit. Filled by enforcer.Register (the exec allow list and the
 * program interpreters the daemon vetted for it and for the entrypoint)
 * and by the entrypoint exec, which also adds (cgroup, ino 0, dev 0,
 * EXEC_AS_PROGRAM): the entrypoint is taken (pending_verdict). */
struct exec_key {
	__u64 cgroup_id;
	__u64 ino;
	__u32 dev; /* kernel dev_t of the inode's superblock */
	__u32 pad;
};

/* What an exec_allow entry lets a file be (bits of its __u8 value). */
enum exec_allow_bit {
	/* executed: the file of an exec, every binfmt stage
	 * (bprm_check_security) */
	EXEC_AS_PROGRAM = 1U << 0,
	/* opened for exec (FMODE_EXEC) and never checked as a program: an
	 * ELF's program interpreter (PT_INTERP), which the kernel opens by
	 * path in the process's root at every exec (file_open) */
	EXEC_AS_INTERP = 1U << 1,
	/* the file the first exec of a pending registration may name (the
	 * entrypoint the daemon vetted: every file a lookup of it could
	 * pick); with the marker key (enum exec_allow_marker) present, no
	 * other file may be taken */
	EXEC_AS_ENTRYPOINT = 1U << 2,
};

/* The marker keys of exec_allow: (cgroup, ino 0, dev MARKER). Inode 0 is
 * no file. */
enum exec_allow_marker {
	EXEC_MARKER_TAKEN = 0,		   /* the entrypoint was taken */
	EXEC_MARKER_ENTRYPOINTS_LISTED = 1, /* the registration lists its entrypoints */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct exec_key);
	__type(value, __u8); /* enum exec_allow_bit */
} exec_allow SEC(".maps");

/* exec_listed: the entry of (cgroup, file) holds one of the bits want. */
static __always_inline bool exec_listed(__u64 cgroup_id, __u64 ino, __u32 dev,
					__u8 want)
{
	struct exec_key k = {.cgroup_id = cgroup_id, .ino = ino, .dev = dev};
	__u8 *v = bpf_map_lookup_elem(&exec_allow, &k);
	return v && (*v & want);
}

/*
 * exec_allowed: the meet over nested shell=none ceilings: the file must be
 * listed with one of the bits want by EVERY active shell=none ancestor
 * with the given audit mode (audit=1 checks the audit-only ones). Missing
 * entry: deny. Returns 1 when allowed.
 */
static __noinline int exec_allowed(__u64 ino, __u32 dev, int audit, __u8 want)
{
	for (int level = 0; level < MAX_CGROUP_LEVEL; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			return 1;
		struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
		if (!c || (c->flags & CEILING_PENDING) || !(c->deny & DENY_SHELL))
			continue;
		if (!!(c->flags & CEILING_AUDIT_ONLY) != !!audit)
			continue;
		if (!exec_listed(id, ino, dev, want))
			return 0;
	}
	return 0; /* deeper than the bound: deny */
}

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
		e->seen |= WR_DENY_TOTAL; /* no writable roots for it */
		if (!e->deny_cgid[1])
			e->deny_cgid[1] = e->deny_cgid[3] ? e->deny_cgid[3] : e->sandbox_cgid;
	} else if (*f & TASK_EXEC_WRITE_AUDITED) {
		e->audit |= DENY_WRITE;
		e->seen |= WR_AUDIT_TOTAL;
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
 * ancestors whose shell ceiling restricts exec, and the pending
 * shell=none ones (the meet: the oldest
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
	if (!c)
		return 0;
	/* A pending shell=none registration counts too: its entrypoint's
	 * exec must not take a file changed since it was registered
	 * (pending_verdict). */
	__u32 restricts = c->flags & CEILING_PENDING ? DENY_SHELL : DENY_SHELL | DENY_SHELL_WRITE;
	if (!(c->deny & restricts))
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

static __always_inline __u64 restrict_since_walk(void)
{
	struct since_ctx s;
	LOOP_CTX_UNKNOWN(s); /* loop.h: 0 */
	s.since += ~0ULL;
	bpf_loop(MAX_CGROUP_LEVEL, since_level, &s, 0);
	return s.since;
}

/* restrict_since for the task whose ceiling resolve() gave e. When exactly
 * one active ancestor restricts exec and none is pending (SEEN_SHELL_ONE,
 * set by the walk), the earliest time is that ancestor's, the cgroup every
 * set shell slot of e names: one lookup instead of a lookup per level.
 * Slots that name two cgroups cannot come from one walk: such an answer is
 * not trusted, and the ancestors are walked. The time is read now, as the
 * walk reads it: a registration replaced since resolve() gives its new
 * time, one removed gives 0 (every file counts as changed). */
static __always_inline __u64 restrict_since(const struct effective *e)
{
	if (!(e->seen & SEEN_SHELL_ONE) || e->pending)
		return restrict_since_walk();
	int n = bit_index(DENY_SHELL), w = bit_index(DENY_SHELL_WRITE);
	__u64 ids[4] = {e->deny_cgid[n], e->deny_cgid[w], e->audit_cgid[n], e->audit_cgid[w]};
	__u64 id = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (!ids[i])
			continue;
		if (id && ids[i] != id)
			return restrict_since_walk();
		id = ids[i];
	}
	__u64 *t = bpf_map_lookup_elem(&ceiling_since, &id);
	return t ? *t : 0;
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
static __always_inline bool changed_since_registration(const struct effective *e,
							struct inode *inode) /* typed: see exec_restricted_file */
{
	struct super_block *sb = inode->i_sb;
	if (!sb || !ctime_local(sb->s_magic))
		return true;
	__u64 since = restrict_since(e);
	__u32 gran = sb->s_time_gran;
	if (gran > 1 && gran <= 1000000000)
		since -= since % gran;
	return inode_ctime_ns_btf(inode) >= (__s64)since;
}

/* exec_restricted_file: a memfd / kernel-internal file, a file an enforced
 * process wrote (inode mark: kept by tmpfs/ramfs for the file's lifetime),
 * or one changed since registration (ctime: every other filesystem). f is
 * a hook's file (its BTF type known to the verifier): typed loads; a
 * missing mount or inode counts as restricted. */
static __always_inline bool exec_restricted_file(const struct effective *e, struct file *f)
{
	struct vfsmount *mnt = f->f_path.mnt;
	if (!mnt || (mnt->mnt_flags & MNT_INTERNAL))
		return true;
	struct inode *inode = f->f_inode;
	if (!inode)
		return true;
	if (bpf_inode_storage_get(&written_inodes, inode, 0, 0))
		return true;
	return changed_since_registration(e, inode);
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
	if (!exec_restricted_file(e, f))
		return 0;
	__u32 bit = none ? DENY_SHELL : DENY_SHELL_WRITE;
	int v = none == DECISION_DENIED || ro == DECISION_DENIED ? DECISION_DENIED : DECISION_AUDITED;
	return exec_event(e, v, bit, f, f->f_inode, hook, RULE_CODE_MAPPING);
}

/* What a check of the pending registrations found: the deepest enforcing
 * registration that refuses the file (0: none) and the deepest audit-only
 * one. */
struct pending_check {
	__u64 deny_cgid;
	__u64 audit_cgid;
	/* the deepest pending shell=none registrations at all, enforcing and
	 * audit-only: under them no file changed since registration is taken
	 * or run either (exec_file_verdict) */
	__u64 pending_deny_cgid;
	__u64 pending_audit_cgid;
};

/* The file pending_verdict judges. */
enum pending_stage {
	PENDING_OPEN,	    /* opened for exec after the program's check (exec_open) */
	PENDING_EXEC,	    /* a later binfmt stage of an exec, or a later exec */
	PENDING_EXEC_FIRST, /* the file an exec names (bprm_check_security) */
};

/* take_entrypoint notes (cgroup, file) as a program on the list, keeping
 * an interpreter bit the registration gave the same file, then the taken
 * marker. Returns 0 on success (the caller fails closed otherwise). */
static __always_inline int take_entrypoint(__u64 id, __u64 ino, __u32 dev)
{
	struct exec_key k = {.cgroup_id = id, .ino = ino, .dev = dev};
	struct exec_key taken = {.cgroup_id = id, .dev = EXEC_MARKER_TAKEN};
	__u8 one = EXEC_AS_PROGRAM;
	__u8 *v = bpf_map_lookup_elem(&exec_allow, &k);
	if (v)
		*v |= EXEC_AS_PROGRAM;
	else if (bpf_map_update_elem(&exec_allow, &k, &one, BPF_ANY))
		return -1;
	return bpf_map_update_elem(&exec_allow, &taken, &one, BPF_ANY) ? -1 : 0;
}

/*
 * pending_verdict: a file exec'd or opened for exec in the subtree of
 * pending shell=none registrations, before the lifecycle program
 * activates them.
 *
 * The first exec is the container's entrypoint: the file it names
 * (PENDING_EXEC_FIRST) is noted on the registration's allow list (with a
 * marker, key inode 0, that says the entrypoint was taken), and allowed
 * from then on. When the registration lists its entrypoints (the files
 * its vetting found, EXEC_AS_ENTRYPOINT, and the marker that says so),
 * the first exec must name one of them: a file swapped in at the
 * entrypoint's path after the vetting is refused, not taken. Only that file: a later binfmt stage of the same exec (a
 * script's interpreter, a binfmt_misc interpreter) must already be on the
 * list of every pending shell=none ancestor, as any exec after activation
 * must; otherwise a #!/bin/sh entrypoint would run the shell with no check
 * at all (X2). So must the file of a later exec while the registration is
 * still pending (the first one failed after its check: ENOEXEC, a missing
 * program interpreter), or a runtime's fallback (glibc's execvp runs
 * /bin/sh on ENOEXEC) would become the entrypoint instead of the program
 * the daemon vetted (PENDING_EXEC: listed as a program).
 *
 * An open for exec after the program's check (PENDING_OPEN, exec_open)
 * must be listed as a program or an interpreter once the entrypoint is
 * taken: the entrypoint's program interpreter, opened within its exec
 * before the registration is activated, was vetted and listed with it.
 * Before that, the open is the entrypoint's own program's.
 *
 * Sets ps->deny_cgid to the deepest enforcing registration that refuses
 * the file (or whose list cannot be written: fail closed), ps->audit_cgid
 * to the deepest audit-only one; both stay 0 when the exec may go on.
 * ps->pending_deny_cgid and ps->pending_audit_cgid name the deepest
 * pending shell=none registrations at all: under them a file changed
 * since registration is refused too (a vetted entrypoint rewritten in
 * place keeps its identity).
 * Deeper than the bound: every registered cgroup is above it
 * (enforcer.Register refuses deeper ones), so none is missed.
 */
static __noinline int pending_verdict(__u64 ino, __u32 dev, int stage,
				      struct pending_check *ps)
{
	__u8 want = stage == PENDING_OPEN ? EXEC_AS_PROGRAM | EXEC_AS_INTERP : EXEC_AS_PROGRAM;
	for (int level = 0; level < MAX_CGROUP_LEVEL; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			return 0;
		struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
		if (!c || !(c->flags & CEILING_PENDING) || !(c->deny & DENY_SHELL))
			continue;
		__u32 flags = c->flags;
		if (flags & CEILING_AUDIT_ONLY)
			ps->pending_audit_cgid = id;
		else
			ps->pending_deny_cgid = id;
		struct exec_key taken = {.cgroup_id = id, .dev = EXEC_MARKER_TAKEN};
		bool is_taken = bpf_map_lookup_elem(&exec_allow, &taken) != NULL;
		if (!is_taken && stage == PENDING_EXEC_FIRST) {
			struct exec_key listed = {.cgroup_id = id, .dev = EXEC_MARKER_ENTRYPOINTS_LISTED};
			bool vetted = !bpf_map_lookup_elem(&exec_allow, &listed) ||
				      exec_listed(id, ino, dev, EXEC_AS_ENTRYPOINT);
			if (vetted && !take_entrypoint(id, ino, dev))
				continue;
		} else if (!is_taken && stage == PENDING_OPEN) {
			continue;
		} else if (exec_listed(id, ino, dev, want)) {
			continue;
		}
		if (flags & CEILING_AUDIT_ONLY)
			ps->audit_cgid = id;
		else
			ps->deny_cgid = id;
	}
	return 0;
}

/*
 * exec_open: an open for exec (FMODE_EXEC; file.bpf.c file_open) after
 * the exec's program passed bprm_check_security (which sets
 * TASK_EXEC_PROGRAM_CHECKED for a restricted task). The kernel opens the
 * program of every exec this way and then checks it, but it also opens
 * an ELF's program interpreter
 * (PT_INTERP) this way, by path in the process's own root, with no exec
 * check of its own: a sandbox that makes that path lead elsewhere (a
 * symlink renamed over the loader, a chroot into a root of its own) would
 * run any program under an allowed one. So:
 *  - shell=none: the file must be listed by every active shell=none
 *    ancestor as a program or as a vetted interpreter (EXEC_AS_INTERP),
 *    and by every pending one whose entrypoint is taken (pending_verdict);
 *  - shell=none and read_only: never a memfd or a file the sandbox wrote
 *    or could have written (exec.h exec_restricted_file), the rule the
 *    program itself meets at bprm_check_security.
 * A script's interpreter is checked here too, and then again as a program
 * (its own bprm_check_security stage). A flag left by an exec that failed
 * after its check only moves the next exec's refusal, if any, from
 * bprm_check_security to here. Rule RULE_EXEC_OPEN; the exec fails with
 * EPERM before its point of no return.
 */
/*
 * exec_file_verdict: what the shell ceilings say of a file of an exec
 * (stage PENDING_EXEC_FIRST or PENDING_EXEC: the program of a binfmt
 * stage, at bprm_check_security) or of an open for exec after the
 * program's check (PENDING_OPEN: an interpreter, exec_open), for the
 * current task whose ceiling resolve() gave (e, found): the pending
 * registrations' rule (pending_verdict), then under a restricted shell
 * no memfd or written file (exec_restricted_file) and, under shell=none,
 * the allow list of every active shell=none ancestor (a program for an
 * exec, a program or an interpreter for an open). Records each refusal
 * or audited would-be refusal with hook and rule; returns the hook's
 * value (0: go on).
 */
static __always_inline int exec_file_verdict(struct effective *e, int found, struct file *f,
					     struct inode *inode, int stage, __u16 hook, __u32 rule)
{
	__u64 ino = inode->i_ino; /* typed: a hook's file's inode */
	struct super_block *sb = inode->i_sb;
	__u32 dev = sb ? sb->s_dev : 0;
	if (e->pending) {
		struct pending_check ps = {};
		pending_verdict(ino, dev, stage, &ps);
		int i = bit_index(DENY_SHELL);
		if (ps.deny_cgid) {
			e->deny_cgid[i] = ps.deny_cgid; /* the record's deciding cgroup */
			return exec_event(e, DECISION_DENIED, DENY_SHELL, f, inode, hook, rule);
		}
		if (ps.audit_cgid) {
			__u64 prev = e->audit_cgid[i];
			e->audit_cgid[i] = ps.audit_cgid;
			exec_event(e, DECISION_AUDITED, DENY_SHELL, f, inode, hook, rule);
			e->audit_cgid[i] = prev;
		}
		if ((ps.pending_deny_cgid || ps.pending_audit_cgid) && exec_restricted_file(e, f)) {
			/* The vetted file rewritten in place since the
			 * registration, a memfd, a file written under it. */
			if (ps.pending_deny_cgid) {
				e->deny_cgid[i] = ps.pending_deny_cgid;
				return exec_event(e, DECISION_DENIED, DENY_SHELL, f, inode, hook, rule);
			}
			__u64 prev = e->audit_cgid[i];
			e->audit_cgid[i] = ps.pending_audit_cgid;
			exec_event(e, DECISION_AUDITED, DENY_SHELL, f, inode, hook, rule);
			e->audit_cgid[i] = prev;
		}
	}
	if (!found)
		return 0;
	int none = verdict(e, DENY_SHELL);
	int ro = verdict(e, DENY_SHELL_WRITE);
	if (!none && !ro)
		return 0;
	__u32 bit = none ? DENY_SHELL : DENY_SHELL_WRITE;
	int v = none == DECISION_DENIED || ro == DECISION_DENIED ? DECISION_DENIED : DECISION_AUDITED;
	/* memfds and other kernel-internal files, files the sandbox wrote or
	 * could have written. */
	if (exec_restricted_file(e, f))
		return exec_event(e, v, bit, f, inode, hook, rule);
	__u8 want = stage == PENDING_OPEN ? EXEC_AS_PROGRAM | EXEC_AS_INTERP : EXEC_AS_PROGRAM;
	if (none == DECISION_DENIED && !exec_allowed(ino, dev, 0, want))
		return exec_event(e, DECISION_DENIED, DENY_SHELL, f, inode, hook, rule);
	if (none == DECISION_AUDITED && !exec_allowed(ino, dev, 1, want))
		return exec_event(e, DECISION_AUDITED, DENY_SHELL, f, inode, hook, rule);
	return 0;
}

static __always_inline int exec_open(struct file *f) /* file.bpf.c */
{
	/* The program's own open comes before bprm_check_security, which
	 * decides on it (and sets the flag): only the opens after it are
	 * interpreters. */
	__u32 *tf = bpf_task_storage_get(&task_flags, bpf_get_current_task_btf(), 0, 0);
	if (!tf || !(*tf & TASK_EXEC_PROGRAM_CHECKED))
		return 0;
	struct inode *inode = f->f_inode;
	if (!inode)
		return -EPERM;
	struct effective e = {};
	int found = resolve(&e);
	return exec_file_verdict(&e, found, f, inode, PENDING_OPEN, HOOK_FILE_OPEN, RULE_EXEC_OPEN);
}

#endif /* ENFORCERD_EXEC_H */
