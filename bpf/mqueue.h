/* SPDX-License-Identifier: GPL-2.0 */
/*
 * POSIX message queues created outside the sandbox (ipc.bpf.c records,
 * file.bpf.c decides), for every enforced process whatever its ceiling: the
 * twin of the SysV rule (ipc.bpf.c). A queue is an inode on an mqueue
 * superblock (MQUEUE_MAGIC): the IPC namespace's internal mount, which
 * mq_open(3) and mq_unlink(3) use, and every mqueue mount (/dev/mqueue)
 * show the same inodes.
 *
 *  - Record: inode_alloc_security on an mqueue superblock runs in the
 *    creator's context (mqueue_create_attr -> mqueue_get_inode ->
 *    new_inode) and stores the creator's cgroup ancestors (struct owner,
 *    ipc.h) in the inode's storage (mq_owners). mqueue inodes are allocated
 *    only when a queue (or a mount's root directory) is created, never on a
 *    lookup, and mqueue_create_attr pins the queue's dentry (dget) until
 *    mq_unlink: the record lives exactly as long as the queue.
 *  - Decide: opening a queue (any mode: mq_open, open(2) under an mqueue
 *    mount, /proc/<pid>/fd/N of a queue descriptor), unlinking it and
 *    changing its attributes (chmod/chown under an mqueue mount) are refused
 *    unless its creator was in the subtree of the current task's sandbox.
 *    Directories of a mount (its root) are not queues and stay readable.
 *
 * Fail direction: a queue without a record (created before enforcerd
 * loaded, or its record could not be made for a process outside every
 * sandbox) is outside. A creation whose record cannot be made by an
 * enforced or pending process is refused (-ENOMEM from
 * inode_alloc_security: the queue never exists).
 *
 * mq_timedsend, mq_timedreceive, mq_notify and mq_getsetattr on a
 * descriptor reach no LSM hook: a queue descriptor inherited from outside
 * or passed in (SCM_RIGHTS, pidfd_getfd) stays usable (threat model).
 */
#ifndef ENFORCERD_MQUEUE_H
#define ENFORCERD_MQUEUE_H

#include "ipc.h"

#define MQUEUE_MAGIC 0x19800202 /* include/uapi/linux/magic.h */

/* The creator of every queue (and mqueue root directory) allocated since
 * the map was pinned, in the queue inode's storage. */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct owner);
} mq_owners SEC(".maps");

/* mqueue_sb: inode is on an mqueue superblock. Direct (BTF) loads: inode
 * is a hook argument or a pointer read from one with a BTF load (never a
 * BPF_CORE_READ result); a process outside every sandbox pays these two
 * loads and a compare. */
static __always_inline bool mqueue_sb(struct inode *inode)
{
	if (!inode)
		return false;
	struct super_block *sb = inode->i_sb;
	return sb && sb->s_magic == MQUEUE_MAGIC;
}

/* mqueue_record_creator: at inode_alloc_security, record the current task
 * as the creator of an mqueue inode. Returns 0, or the error that refuses
 * the creation when the record cannot be made and the creator is enforced
 * (or pending). */
static __always_inline int mqueue_record_creator(struct inode *inode, __u16 hook)
{
	if (!mqueue_sb(inode))
		return 0;
	struct owner *o = bpf_inode_storage_get(&mq_owners, inode, 0,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (o) {
		for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
			o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
		return 0;
	}
	struct effective e = {};
	if (resolve(&e))
		return tamper(&e, hook, RULE_OWNER_UNRECORDED, OBJ_NONE, 0);
	if (e.pending)
		return -ENOMEM;
	return 0;
}

/* mqueue_outside: the verdict on opening, unlinking or changing the
 * attributes of inode, when it is a queue created outside the sandbox of
 * the current task (0 for anything that is not a queue). */
static __always_inline int mqueue_outside(struct inode *inode, __u16 hook)
{
	if (!mqueue_sb(inode))
		return 0;
	if ((inode->i_mode & S_IFMT) != S_IFREG)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	struct owner *o = bpf_inode_storage_get(&mq_owners, inode, 0, 0);
	if (o && owner_inside(o, &e))
		return 0;
	return tamper(&e, hook, RULE_IPC_OUTSIDE, OBJ_NONE, BPF_CORE_READ(inode, i_ino));
}

/* mqueue_outside_dentry: the same for the inode of a dentry (inode_unlink,
 * inode_setattr). */
static __always_inline int mqueue_outside_dentry(struct dentry *d, __u16 hook)
{
	return mqueue_outside(d->d_inode, hook); /* a BTF load: see mqueue_sb */
}

#endif /* ENFORCERD_MQUEUE_H */
