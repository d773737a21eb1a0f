/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup2 files and directories are kernfs nodes: which cgroup an inode
 * belongs to, and which file it is.
 */
#ifndef ENFORCERD_KERNFS_H
#define ENFORCERD_KERNFS_H

#include "maps.h"

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

/* cgroup_of_kernfs_inode: the cgroup a cgroup2 inode belongs to (a
 * directory's kernfs node carries it; a file's parent does), and the
 * kernfs node of the file itself in *file_kn (NULL for a directory). */
static __always_inline struct cgroup *cgroup_of_kernfs_inode(struct inode *inode,
							   struct kernfs_node **file_kn)
{
	struct kernfs_node *kn = BPF_CORE_READ(inode, i_private);
	*file_kn = NULL;
	if (!kn)
		return NULL;
	struct kernfs_node *dir = kn;
	if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFDIR) {
		*file_kn = kn;
		dir = kn_parent(kn);
	}
	if (!dir)
		return NULL;
	return BPF_CORE_READ(dir, priv);
}

/* name_is compares a kernfs name with a literal of n bytes (NUL
 * included, n <= 24). */
static __always_inline bool name_is(const char *kname, const char *lit, int n)
{
	char buf[24] = {};
	bpf_probe_read_kernel_str(buf, sizeof(buf), kname);
	for (int i = 0; i < n && i < 24; i++) {
		if (buf[i] != lit[i])
			return false;
	}
	return true;
}

#endif /* ENFORCERD_KERNFS_H */
