/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writable roots under write=false (docs/design.md "Writable roots"): a
 * registration may keep writes allowed beneath up to MAX_WRITE_ROOTS
 * directories, each identified by device and inode when it was registered.
 *
 * A write is allowed by such a ceiling only when its target lies beneath one
 * of the ceiling's roots: the ancestor walk (walk.h) notes in struct
 * effective whether write denials come from ancestors with roots only
 * (write_roots), roots_verdict lists those ancestors again, and each of
 * them must see the target beneath one of ITS roots (the meet of ancestors
 * is an intersection).
 *
 * "Beneath": climbing d_parent from the target's dentry (or its parent
 * directory, for operations on names) reaches a dentry whose (s_dev, i_ino)
 * is a root, within MAX_ROOT_DEPTH levels. The climb stops at the root of
 * the dentry's filesystem; only a hook that knows the vfsmount (file and
 * path hooks) continues from a mount's root to its mountpoint in the parent
 * mount. Inode-only hooks cannot prove anything across a mount and deny.
 * Nothing on a kernel interface (procfs, sysfs, cgroupfs, bpffs, ...) is
 * ever beneath a root (threat model R7).
 */
#ifndef ENFORCERD_ROOTS_H
#define ENFORCERD_ROOTS_H

#include "enforcerd.h"

/* One root: kernel dev_t (major<<20|minor) of its superblock and its inode
 * number. */
struct root_id {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* The roots of one registered cgroup; root[count..] are unused. Written as
 * one map value (a registration's roots change atomically) before the
 * ceiling gets CEILING_WRITE_ROOTS. */
struct root_set {
	__u32 count;
	__u32 pad;
	struct root_id root[MAX_WRITE_ROOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64); /* cgroup v2 id of the registered cgroup */
	__type(value, struct root_set);
} write_roots SEC(".maps");

/*
 * The decision cache in front of the climb (roots_check). A write that
 * every ancestor with roots allowed leaves, on the inode of the directory
 * the climb started from, what it was decided for: that directory's
 * dentry, the current cgroup id and the two generations below. A later
 * write starting from the same dentry, by a task of the same cgroup, with
 * neither generation changed, is allowed without the climb.
 *
 * What the climb's answer depends on, and what invalidates it:
 *  - the ceilings and roots of the task's ancestors: enforcerd_config's
 *    generation (maps.h), which every registration change moves;
 *  - the chain of d_parent from that directory up: only the rename of a
 *    directory changes it on the storage file systems roots are accepted
 *    on (roots_storage_magic; a directory has one dentry there, so the same
 *    dentry on the same inode is the same place). names_generation moves
 *    before every rename that moves a directory (inode_rename) and after it
 *    (fexit on vfs_rename), so a climb that overlapped such a rename
 *    records a generation that is already stale. A rename of anything else
 *    (a file, a symlink, a device node; RENAME_WHITEOUT's whiteout is a
 *    device node) moves one dentry that is no directory: no entry's chain
 *    contains it, because entries are kept for directories only, and a
 *    write to the moved file starts its climb from the file's d_parent,
 *    read anew on every write. Such renames leave the generation (and every
 *    sandbox's entries) alone;
 *  - mounts: a climb that crossed from a mount to its mountpoint is never
 *    cached (the mount tree changes without a rename).
 * Denials and audited writes are never cached. A cache entry that cannot
 * be created costs the next write the climb, nothing more.
 */
struct names_generation {
	__u64 gen;	/* moved by 1 before and after every rename */
	__u64 tracking; /* 1: the program moving gen after renames is attached
			 * (enforcer sets it after the load): without it,
			 * nothing is cached or read from the cache */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct names_generation);
} names_generation SEC(".maps");

/* renames_active[0]: renames that move a directory (rename_moves_directory),
 * between their inode_rename and the return of their vfs_rename. While it
 * is not 0 nothing is cached or read from the cache: a directory may have
 * moved, and the second move of the generation is still to come. Only the
 * programs write it (a map of its own: user space rewrites
 * names_generation whole). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} renames_active SEC(".maps");

struct roots_cache_entry {
	__u64 dentry;	  /* struct dentry * the climb started from */
	__u64 cgid;	  /* the current cgroup id it was decided for */
	__u64 config_gen; /* enforcerd_config's generation, read before */
	__u64 names_gen;  /* names_generation.gen, read before */
};

struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct roots_cache_entry);
} roots_cache SEC(".maps");

#ifndef ENFORCERD_ROOTS_TYPES_ONLY

/* A task's renames between inode_rename and the return of vfs_rename
 * (more than one when overlayfs renames in its upper layer inside its own
 * rename): rename_end undoes only what rename_begin counted, so a rename
 * whose inode_rename never reached this program (an earlier LSM refused
 * it, or the program was attached after that point) leaves active alone.
 * key: the innermost counted rename's two names and its device:
 * RENAME_EXCHANGE calls inode_rename twice, with the ends swapped, for one
 * vfs_rename. */
struct rename_state {
	__u32 depth;
	__u32 pad;
	__u64 key;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rename_state);
} rename_depth SEC(".maps");

/* dentry_is_dir: d has a directory inode. */
static __always_inline bool dentry_is_dir(struct dentry *d)
{
	struct inode *inode = d->d_inode;
	return inode && (inode->i_mode & S_IFMT) == S_IFDIR;
}

/* rename_moves_directory: a rename of these two ends moves a directory:
 * the source is one, or (RENAME_EXCHANGE, whose second end moves too) the
 * target is. A directory can only replace a directory and a non-directory
 * only a non-directory, so for a plain rename the source decides; the
 * target is asked as well, which costs a load and covers the exchange.
 * Both dentries are held, and their parents locked, from inode_rename to
 * vfs_rename's return: neither changes its inode in between, so the
 * answer at rename_begin and at rename_end is the same. */
static __always_inline bool rename_moves_directory(struct dentry *old_dentry,
						   struct dentry *new_dentry)
{
	return dentry_is_dir(old_dentry) || (new_dentry && dentry_is_dir(new_dentry));
}

/* rename_begin: a rename that moves a directory is about to happen
 * (inode_rename; rename_moves_directory). active first,
 * then gen: a climb that reads the new gen (it reads gen first, then
 * active) sees the rename in progress. A depth that cannot be recorded
 * leaves active raised for good: the cache stays off (slower, never
 * wrong). */
static __always_inline void rename_begin(struct dentry *old_dentry, struct dentry *new_dentry)
{
	__u32 zero = 0;
	struct names_generation *g = bpf_map_lookup_elem(&names_generation, &zero);
	__u64 *active = bpf_map_lookup_elem(&renames_active, &zero);
	if (!g || !active)
		return;
	/* Symmetric in the two ends; the device keeps overlayfs's own rename
	 * and the one it makes in its upper layer apart. */
	__u32 names = old_dentry->d_name.hash ^ new_dentry->d_name.hash;
	__u64 key = ((__u64)old_dentry->d_sb->s_dev << 32) | names;
	struct rename_state *st = bpf_task_storage_get(&rename_depth, bpf_get_current_task_btf(), 0,
						       BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st && st->depth && st->key == key)
		return; /* the second call of one RENAME_EXCHANGE: counted */
	__sync_fetch_and_add(active, 1);
	__sync_fetch_and_add(&g->gen, 1);
	if (st) {
		st->depth += 1;
		st->key = key;
	}
}

/* rename_end: vfs_rename of a rename that moves a directory returned
 * (fexit): gen first, then active. A
 * rename this program missed (the kernel skips a tracing program that
 * would recurse on a CPU) leaves active raised: the cache stays off. */
static __always_inline void rename_end(void)
{
	__u32 zero = 0;
	struct names_generation *g = bpf_map_lookup_elem(&names_generation, &zero);
	__u64 *active = bpf_map_lookup_elem(&renames_active, &zero);
	if (!g || !active)
		return;
	__sync_fetch_and_add(&g->gen, 1);
	struct rename_state *st = bpf_task_storage_get(&rename_depth, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->depth)
		return;
	st->depth -= 1;
	st->key = 0;
	__sync_fetch_and_add(active, -1);
}

/* The ancestors of the current task with writable roots (a bpf_loop
 * context). */
struct roots_list {
	__u64 cgid[MAX_ROOT_CEILINGS]; /* root-most first */
	__u32 n;	/* entries of cgid in use */
	__u32 audit;	/* bit i: cgid[i] is audit-only */
	__u32 overflow; /* more than MAX_ROOT_CEILINGS of them */
	__u32 pad;
};

/* roots_collect_level: one cgroup level of the current task; an active
 * ceiling that denies writes except beneath its roots joins the list. The
 * resolve() cache says only that such ancestors exist (struct effective
 * keeps its pinned layout): they are listed again here, on the write path
 * of a process below them only. */
static long roots_collect_level(__u32 level, void *ctx)
{
	struct roots_list *l = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id)
		return 1;
	struct ceiling *ce = bpf_map_lookup_elem(&ceilings, &id);
	if (!ce)
		return 0;
	__u32 flags = ce->flags;
	if ((flags & CEILING_PENDING) || !(ce->deny & DENY_WRITE) ||
	    !(flags & CEILING_WRITE_ROOTS))
		return 0;
	__u32 n = l->n;
	if (n >= MAX_ROOT_CEILINGS) {
		l->overflow = 1;
		return 1;
	}
	l->cgid[n] = id;
	if (flags & CEILING_AUDIT_ONLY)
		l->audit |= 1U << n;
	l->n = n + 1;
	return 0;
}

/* in_roots: (dev, ino) is one of r's roots. */
static __always_inline bool in_roots(const struct root_set *r, __u32 dev, __u64 ino)
{
	__u32 count = r->count;
#pragma unroll
	for (int j = 0; j < MAX_WRITE_ROOTS; j++) {
		if (j < count && r->root[j].dev == dev && r->root[j].ino == ino)
			return true;
	}
	return false;
}

/* The state of one climb (a bpf_loop context; pointers kept as numbers and
 * read with BPF_CORE_READ). */
struct roots_climb {
	__u64 d;        /* struct dentry *: the current level */
	__u64 mnt;      /* struct mount * of d, 0 when unknown */
	__u64 mnt_root; /* mnt's mnt.mnt_root (0 when mnt is 0): read once per mount */
	__u64 cgid;     /* whose roots */
	__u64 bloom;    /* bit (ino & 63) of every root's inode number */
	__u32 found;
	__u32 crossed;  /* went from a mount to its mountpoint */
};

/* roots_bloom: one bit per root, (ino & 63): a level whose inode number
 * has no bit set is no root, without a map lookup or a read of its device. */
static __always_inline __u64 roots_bloom(const struct root_set *r)
{
	__u64 b = 0;
	__u32 count = r->count;
#pragma unroll
	for (int j = 0; j < MAX_WRITE_ROOTS; j++) {
		if (j < count)
			b |= 1ULL << (r->root[j].ino & 63);
	}
	return b;
}

/* roots_step: one level of the climb from the target towards the root of
 * its filesystem (and, with a known mount, on through the mountpoints).
 * Cost per level: three kernel reads (d_inode, i_ino, d_parent); the roots
 * map and the device are read only when the bloom filter matches. */
static long roots_step(__u32 i, void *ctx)
{
	struct roots_climb *c = ctx;
	struct dentry *d = (struct dentry *)c->d;
	struct inode *inode = BPF_CORE_READ(d, d_inode);
	if (inode) {
		__u64 ino = BPF_CORE_READ(inode, i_ino);
		if (c->bloom & (1ULL << (ino & 63))) {
			__u64 id = c->cgid;
			struct root_set *r = bpf_map_lookup_elem(&write_roots, &id);
			if (!r)
				return 1; /* no roots entry any more: outside */
			if (in_roots(r, BPF_CORE_READ(d, d_sb, s_dev), ino)) {
				c->found = 1;
				return 1;
			}
		}
	}
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	bool at_mnt_root = c->mnt && c->mnt_root == (__u64)d;
	if (parent && parent != d) {
		/* Climbing above the mount's root leaves the mount: what lies
		 * above it is the filesystem's, not the mount tree's. */
		if (at_mnt_root) {
			c->mnt = 0;
			c->mnt_root = 0;
		}
		c->d = (__u64)parent;
		return 0;
	}
	/* The filesystem's root: cross to the mountpoint only with a known
	 * mount whose root this is. */
	if (!at_mnt_root)
		return 1;
	struct mount *m = (struct mount *)c->mnt;
	struct mount *up = BPF_CORE_READ(m, mnt_parent);
	if (!up || up == m)
		return 1;
	c->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
	c->crossed = 1;
	c->mnt = (__u64)up;
	c->mnt_root = (__u64)BPF_CORE_READ(up, mnt.mnt_root);
	return 0;
}

/* What roots_beneath returns: bits. */
enum roots_beneath_bit {
	BENEATH_FOUND = 1,   /* beneath one of the roots */
	BENEATH_CROSSED = 2, /* the climb went from a mount to its mountpoint */
};

/* roots_beneath: whether the dentry d (reached through struct mount mnt,
 * 0 when unknown) lies beneath one of cgroup cgid's roots
 * (BENEATH_FOUND), and whether the climb crossed a mount
 * (BENEATH_CROSSED). A global function: the verifier checks it (and its
 * loop) once per program. Fail direction: no roots entry for cgid, or one
 * removed during the climb: not beneath. */
__attribute__((noinline)) int roots_beneath(__u64 cgid, __u64 d, __u64 mnt)
{
	struct roots_climb c = {.d = d, .mnt = mnt, .cgid = cgid};
	if (!d)
		return 0;
	struct root_set *r = bpf_map_lookup_elem(&write_roots, &cgid);
	if (!r)
		return 0;
	c.bloom = roots_bloom(r);
	LOOP_STATE_UNKNOWN(c, found, crossed); /* loop.h */
	if (mnt) {
		struct mount *m = (struct mount *)mnt;
		c.mnt_root = (__u64)BPF_CORE_READ(m, mnt.mnt_root);
	}
	bpf_loop(MAX_ROOT_DEPTH, roots_step, &c, 0);
	return (c.found ? BENEATH_FOUND : 0) | (c.crossed ? BENEATH_CROSSED : 0);
}

/* real_mount: the struct mount of a vfsmount (fs/mount.h container_of). */
static __always_inline __u64 real_mount(__u64 mnt)
{
	if (!mnt)
		return 0;
	return mnt - bpf_core_field_offset(struct mount, mnt);
}

/* The arguments of roots_verdict: a global function takes pointers to
 * kernel objects only as numbers in memory its caller passes. */
struct roots_args {
	__u64 d;      /* struct dentry * */
	__u64 mnt;    /* struct vfsmount *, 0 for inode-only hooks */
	__u32 empty;  /* the decision when no ancestor with roots is left (the
		       * ceilings changed since resolve()): the write verdict */
	__u32 crossed; /* out: some climb crossed a mount (BENEATH_CROSSED) */
};

/* roots_storage_magic: the file systems a write target may be on for roots
 * to lift its denial, the ones roots are accepted on (enforcer/roots.go
 * writeRootFS): an allow list, so a kernel interface mounted beneath a root
 * (fusectl, selinuxfs, ...) is never beneath it, named here or not. */
static __always_inline bool roots_storage_magic(__u64 magic)
{
	switch (magic) {
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case F2FS_SUPER_MAGIC:
		return true;
	}
	return false;
}

/*
 * roots_verdict: the decision of the current task's ancestors with writable
 * roots on a write beneath the dentry a->d (where the climb starts:
 * roots_check): 0 when every one of them sees d beneath one of its roots,
 * else DECISION_DENIED (an enforcing one does not) or DECISION_AUDITED.
 * mnt: the struct vfsmount d was reached through, 0 for inode-only hooks;
 * a->crossed: some climb went on from a mount to its mountpoint. Fail direction: a missing
 * roots entry, an unreadable level, a target on anything but the storage
 * file systems roots are accepted on, more than MAX_ROOT_CEILINGS
 * ancestors with roots or more than MAX_ROOT_DEPTH levels: not beneath; no
 * ancestor with roots left (a registration changed since resolve()):
 * a->empty, the write verdict itself. A global function (pointers passed
 * as numbers).
 */
__attribute__((noinline)) int roots_verdict(struct roots_args *a)
{
	if (!a)
		return DECISION_DENIED;
	__u64 d = a->d, mnt = a->mnt;
	struct roots_list l;
	LOOP_CTX_UNKNOWN(l); /* loop.h: its overflow branch was dead on 6.1 */
	bpf_loop(MAX_CGROUP_LEVEL, roots_collect_level, &l, 0);
	if (l.overflow)
		return DECISION_DENIED;
	if (!l.n) /* the ceilings changed since resolve(): fail closed */
		return a->empty == DECISION_AUDITED ? DECISION_AUDITED : DECISION_DENIED;
	if (!d)
		return DECISION_DENIED;
	struct dentry *dd = (struct dentry *)d;
	__u64 magic = BPF_CORE_READ(dd, d_sb, s_magic);
	if (!roots_storage_magic(magic))
		return DECISION_DENIED; /* R7: only storage is ever beneath a root */
	__u64 start = d;
	__u64 m = real_mount(mnt);
	int v = 0;
	for (int k = 0; k < MAX_ROOT_CEILINGS; k++) {
		if (k >= l.n)
			break;
		int b = roots_beneath(l.cgid[k], start, m);
		if (b & BENEATH_CROSSED)
			a->crossed = 1;
		if (b & BENEATH_FOUND)
			continue;
		if (!(l.audit & (1U << k)))
			return DECISION_DENIED;
		v = DECISION_AUDITED;
	}
	return v;
}

/*
 * roots_check: roots_verdict for a hook's dentry and mount, through the
 * decision cache (above). The climb starts at the directory the write is
 * in: d's parent for an operation on a name (parent) or on a file that is
 * not a directory (a root is always a directory: entry.WriteRoot refuses
 * anything else, so a file is never its own root), else d itself.
 * Leaving a file that is its mount's root (a bind-mounted file) leaves
 * that mount, as the climb itself does.
 */
static __always_inline int roots_check(struct dentry *d, struct vfsmount *mnt, bool parent,
				       int empty)
{
	__u32 zero = 0;
	struct names_generation *ng = bpf_map_lookup_elem(&names_generation, &zero);
	__u64 *active = bpf_map_lookup_elem(&renames_active, &zero);
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	/* Both generations before anything the decision reads; the names
	 * generation before the count of renames in progress (rename_begin
	 * raises the count first: this order sees it). */
	__u64 names_gen = ng ? ENFORCERD_READ_ONCE(ng->gen) : 0;
	__u64 config_gen = cfg ? cfg->generation : 0;
	ENFORCERD_BARRIER();
	bool cache = ng && cfg && active && ng->tracking == 1 && ENFORCERD_READ_ONCE(*active) == 0;
	struct dentry *start = d;
	if (d && (parent || !dentry_is_dir(d))) {
		if (!parent && mnt && mnt->mnt_root == d)
			mnt = NULL;
		start = d->d_parent;
	}
	struct inode *dir = NULL;
	__u64 cur = 0;
	if (cache && start && dentry_is_dir(start)) {
		dir = start->d_inode;
		cur = current_cgroup_id();
		struct roots_cache_entry *ce = bpf_inode_storage_get(&roots_cache, dir, 0, 0);
		if (ce && ce->dentry == (__u64)start && ce->cgid == cur &&
		    ce->config_gen == config_gen && ce->names_gen == names_gen)
			return 0;
	}
	struct roots_args a = {.d = (__u64)start, .mnt = (__u64)mnt, .empty = empty};
	int v = roots_verdict(&a);
	if (!v && !a.crossed && dir) {
		struct roots_cache_entry *ce = bpf_inode_storage_get(&roots_cache, dir, 0,
								     BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (ce) {
			ce->dentry = (__u64)start;
			ce->cgid = cur;
			ce->config_gen = config_gen;
			ce->names_gen = names_gen;
		}
	}
	return v;
}

/* roots_apply: whether the write verdict (verdict(e, DENY_WRITE)) is one
 * writable roots may lift: every enforcing (or, for an audited verdict,
 * audit-only) write denial comes from an ancestor with roots. */
static __always_inline bool roots_apply(const struct effective *e)
{
	__u32 wr = e->seen;
	if (e->deny & DENY_WRITE)
		return (wr & WR_DENY_ROOTS) && !(wr & WR_DENY_TOTAL);
	if (e->audit & DENY_WRITE)
		return (wr & WR_AUDIT_ROOTS) && !(wr & WR_AUDIT_TOTAL);
	return false;
}

#endif /* ENFORCERD_ROOTS_TYPES_ONLY */
#endif /* ENFORCERD_ROOTS_H */
