/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writable roots under write=false (docs/design.md "Writable roots"): a
 * registration may keep writes allowed beneath up to MAX_WRITE_ROOTS
 * directories, each identified by device and inode when it was registered.
 *
 * A write is allowed by such a ceiling only when its target lies beneath one
 * of the ceiling's roots: the ancestor walk (walk.h) lists every ancestor
 * with roots in struct effective, and each of them must see the target
 * beneath one of ITS roots (the meet of ancestors is an intersection).
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

/* The state of one climb (a bpf_loop context; pointers kept as numbers and
 * read with BPF_CORE_READ). */
struct roots_climb {
	__u64 d;   /* struct dentry *: the current level */
	__u64 mnt; /* struct mount * of d, 0 when unknown */
	__u64 cgid[MAX_ROOT_CEILINGS];
	__u32 n;	/* entries of cgid in use */
	__u32 missing;	/* bit i: cgid[i] has not yet seen one of its roots */
};

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

static long roots_step(__u32 i, void *ctx)
{
	struct roots_climb *c = ctx;
	struct dentry *d = (struct dentry *)c->d;
	struct inode *inode = BPF_CORE_READ(d, d_inode);
	if (inode) {
		__u32 dev = BPF_CORE_READ(d, d_sb, s_dev);
		__u64 ino = BPF_CORE_READ(inode, i_ino);
#pragma unroll
		for (int k = 0; k < MAX_ROOT_CEILINGS; k++) {
			if (!(c->missing & (1U << k)))
				continue;
			__u64 id = c->cgid[k];
			struct root_set *r = bpf_map_lookup_elem(&write_roots, &id);
			if (r && in_roots(r, dev, ino))
				c->missing &= ~(1U << k);
		}
		if (!c->missing)
			return 1;
	}
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	struct mount *m = (struct mount *)c->mnt;
	if (parent && parent != d) {
		/* Climbing above the mount's root leaves the mount: what lies
		 * above it is the filesystem's, not the mount tree's. */
		if (m && BPF_CORE_READ(m, mnt.mnt_root) == d)
			c->mnt = 0;
		c->d = (__u64)parent;
		return 0;
	}
	/* The filesystem's root: cross to the mountpoint only with a known
	 * mount whose root this is. */
	if (!m || BPF_CORE_READ(m, mnt.mnt_root) != d)
		return 1;
	struct mount *up = BPF_CORE_READ(m, mnt_parent);
	if (!up || up == m)
		return 1;
	c->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
	c->mnt = (__u64)up;
	return 0;
}

/* real_mount: the struct mount of a vfsmount (fs/mount.h container_of). */
static __always_inline struct mount *real_mount(struct vfsmount *mnt)
{
	if (!mnt)
		return NULL;
	return (struct mount *)((void *)mnt - bpf_core_field_offset(struct mount, mnt));
}

/*
 * roots_verdict: the decision of the ancestors with roots (e->roots_cgid)
 * on a write to d: 0 when every one of them sees d beneath one of its roots,
 * else DECISION_DENIED (an enforcing one does not) or DECISION_AUDITED.
 * parent: climb from d's parent directory (operations on a name: create,
 * unlink, rename, link, ...). mnt: the mount d was reached through, NULL
 * for inode-only hooks. Fail direction: a missing roots entry, an
 * unreadable level, a kernel interface, or more than MAX_ROOT_DEPTH levels:
 * not beneath.
 */
static __attribute__((noinline, unused)) int roots_verdict(struct effective *e, struct dentry *d,
				    struct vfsmount *mnt, bool parent)
{
	__u32 n = e->nroots;
	if (!n)
		return 0;
	if (n > MAX_ROOT_CEILINGS)
		n = MAX_ROOT_CEILINGS;
	struct roots_climb c = {};
	__u32 all = (1U << n) - 1;
	c.n = n;
	c.missing = all;
#pragma unroll
	for (int k = 0; k < MAX_ROOT_CEILINGS; k++)
		c.cgid[k] = e->roots_cgid[k];
	if (d) {
		struct super_block *sb = BPF_CORE_READ(d, d_sb);
		__u64 magic = BPF_CORE_READ(sb, s_magic);
		if (!kernel_fs_magic(magic) && magic != BPF_FS_MAGIC) {
			c.d = (__u64)(parent ? BPF_CORE_READ(d, d_parent) : d);
			c.mnt = (__u64)real_mount(mnt);
			if (c.d)
				bpf_loop(MAX_ROOT_DEPTH, roots_step, &c, 0);
		}
	}
	__u32 missing = c.missing & all;
	if (!missing)
		return 0;
	if (missing & ~e->roots_audit)
		return DECISION_DENIED;
	return DECISION_AUDITED;
}

#endif /* ENFORCERD_ROOTS_H */
