/* SPDX-License-Identifier: GPL-2.0 */
/*
 * N11: FIFOs made outside the sandbox, under network=false. A named FIFO a
 * host process made (a daemon's control FIFO, a build's jobserver) is a
 * channel to that process, the non-socket twin of a unix socket bound
 * outside (N4): opening it is refused, whatever the mode. FIFOs the sandbox
 * makes keep working, and so do pipes without a name (pipe(2), the
 * sandbox's inherited stdio, reopened through /proc/<pid>/fd: pipefs).
 *
 * The creator is recorded when the FIFO is made, in the FIFO inode's
 * storage (fifo_owners, struct owner of ipc.h), in two steps, because no
 * hook sees both the creating task and the new inode of a mknod:
 *
 *  - inode_mknod (file.bpf.c, every process, only for S_IFIFO once the
 *    write ceiling allowed it) notes the dentry being made in the task's
 *    storage (fifo_pending; two slots: overlayfs makes the upper FIFO inside
 *    the overlay's mknod, with its own inode_mknod);
 *  - d_instantiate (ipc.bpf.c) of a FIFO inode on a noted dentry, in the
 *    same task, records the creator on that inode and clears the note. A
 *    lookup or a link also instantiates dentries, but only a dentry this
 *    task is making (same address and name hash, noted less than a second
 *    ago) matches, only an inode with one link (a new one: link(2) raises
 *    the count before it instantiates) is recorded, inode_link clears the
 *    task's notes (a mknod the filesystem failed after the hook leaves its
 *    note and its negative dentry behind), and an inode that has a record
 *    keeps it.
 *
 * Fail direction: a FIFO without a record is outside: made before
 * enforcerd loaded, or by a path without inode_mknod, or a FIFO of a disk
 * filesystem whose inode the kernel evicted from its cache (inode storage
 * lives with the in-memory inode): then the sandbox's own FIFO is refused
 * too, never the reverse.
 */
#ifndef ENFORCERD_FIFO_H
#define ENFORCERD_FIFO_H

#include "ipc.h"

#define PIPEFS_MAGIC 0x50495045 /* include/uapi/linux/magic.h */

struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct owner);
} fifo_owners SEC(".maps");

/* A FIFO this task is making: its dentry, name hash and when it was noted
 * (dentry 0: a free slot). */
struct fifo_note {
	__u64 dentry[2];
	__u64 when[2];
	__u32 hash[2];
};

/* A note older than this matches nothing: a mknod completes (or fails)
 * well within it; a stale note (a mknod the filesystem failed after the
 * hook) must not match a later lookup of a reused dentry. */
#define FIFO_NOTE_NS 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fifo_note);
} fifo_pending SEC(".maps");

/* fifo_mknod: inode_mknod's part, after the write ceiling allowed the
 * mknod: note a FIFO being made. A note that cannot be stored leaves the
 * FIFO unrecorded (outside). */
static __always_inline void fifo_mknod(struct dentry *d, umode_t mode)
{
	if ((mode & S_IFMT) != S_IFIFO)
		return;
	struct fifo_note *n = bpf_task_storage_get(&fifo_pending, bpf_get_current_task_btf(),
						   0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!n)
		return;
	n->dentry[1] = n->dentry[0];
	n->hash[1] = n->hash[0];
	n->when[1] = n->when[0];
	n->dentry[0] = (__u64)d;
	n->hash[0] = BPF_CORE_READ(d, d_name.hash);
	n->when[0] = bpf_ktime_get_ns();
}

/* fifo_instantiate: d_instantiate's part: record the creator of a FIFO
 * this task noted. A process that makes no FIFO pays a load and a compare. */
static __always_inline void fifo_instantiate(struct dentry *d, struct inode *inode)
{
	if (!inode || (inode->i_mode & S_IFMT) != S_IFIFO)
		return;
	struct fifo_note *n = bpf_task_storage_get(&fifo_pending, bpf_get_current_task_btf(), 0, 0);
	if (!n)
		return;
	__u32 hash = BPF_CORE_READ(d, d_name.hash);
	__u64 now = bpf_ktime_get_ns();
	int slot = -1;
	if (n->dentry[0] == (__u64)d && n->hash[0] == hash && now - n->when[0] < FIFO_NOTE_NS)
		slot = 0;
	else if (n->dentry[1] == (__u64)d && n->hash[1] == hash && now - n->when[1] < FIFO_NOTE_NS)
		slot = 1;
	if (slot < 0)
		return;
	if (slot == 0)
		n->dentry[0] = 0;
	else
		n->dentry[1] = 0;
	/* Only an inode the noted mknod created: it has exactly one link.
	 * link(2) raises an existing inode's link count before it
	 * instantiates the new name (ext4, shmem, overlayfs), so a host FIFO
	 * linked onto the name of a mknod that failed after inode_mknod
	 * (ENOSPC) is never recorded as the sandbox's (fifo_link clears the
	 * note first anyway). */
	if (BPF_CORE_READ(inode, i_nlink) != 1)
		return;
	/* A record is never replaced: a new FIFO has none, and an existing
	 * one (made outside) keeps its creator whatever dentry it gets. */
	if (bpf_inode_storage_get(&fifo_owners, inode, 0, 0))
		return;
	struct owner *o = bpf_inode_storage_get(&fifo_owners, inode, 0,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!o)
		return;
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
		o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
}

/* fifo_link: inode_link's part, for every link the write ceiling allowed:
 * a link never makes a FIFO, it instantiates its new name with an inode
 * that already exists, so it ends the task's notes: a note left by a
 * mknod that failed after inode_mknod (the filesystem's ENOSPC, EDQUOT,
 * EIO) keeps its dentry negative and cached under the same name, and a
 * link onto that name must not be taken for the FIFO being made. */
static __always_inline void fifo_link(void)
{
	struct fifo_note *n = bpf_task_storage_get(&fifo_pending, bpf_get_current_task_btf(), 0, 0);
	if (!n)
		return;
	n->dentry[0] = 0;
	n->dentry[1] = 0;
}

/* fifo_outside: file_open's and file_receive's part: under network=false,
 * opening or receiving (SCM_RIGHTS, pidfd_getfd) a named FIFO whose
 * creator was outside the subtree of the cgroup that denies network (as N4
 * decides for unix sockets). */
static __always_inline int fifo_outside(struct file *file, __u16 hook)
{
	struct inode *inode = file->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFIFO)
		return 0;
	struct super_block *sb = inode->i_sb;
	if (!sb || sb->s_magic == PIPEFS_MAGIC)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int v = verdict(&e, DENY_NETWORK);
	if (!v)
		return 0;
	__u64 net = v == DECISION_DENIED ? e.deny_cgid[bit_index(DENY_NETWORK)] :
		e.audit_cgid[bit_index(DENY_NETWORK)];
	struct owner *o = bpf_inode_storage_get(&fifo_owners, inode, 0, 0);
	if (o && e.net_level >= 0 && e.net_level < MAX_CGROUP_LEVEL && net &&
	    o->anc[e.net_level] == net)
		return 0;
	record_event(&e, hook, v, DENY_NETWORK, {
		fill_inode(ev, inode);
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

#endif /* ENFORCERD_FIFO_H */
