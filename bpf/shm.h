/* SPDX-License-Identifier: GPL-2.0 */
/*
 * POSIX semaphores and POSIX shared memory (sem_open(3), shm_open(3)): plain
 * files in the sandbox's POSIX shared memory directory, the tmpfs mounted
 * at /dev/shm as the sandbox's processes see it. The same rule as every
 * IPC object (SysV: ipc.bpf.c, message queues: mqueue.h): made outside ->
 * not usable inside; made by the sandbox -> usable under every ceiling.
 *
 *  - Identity: the directory is named at registration by identity (its
 *    device and inode, ipc_dirs[registered cgroup id]), never by a path in
 *    the kernel; user space names it only when it is the root of a tmpfs
 *    superblock (entry.ShmDirOf), so "on that superblock" and "beneath that
 *    directory" are the same set of files, and a hard link or rename can
 *    move nothing off it (the kernel refuses them across superblocks,
 *    EXDEV). No entry: no rule; its files are writes like any other (fail
 *    closed).
 *  - Record: inode_alloc_security (ipc.bpf.c) on that superblock, run in
 *    the creator's context (tmpfs allocates inodes only when a file is
 *    created: open O_CREAT, mknod, O_TMPFILE), stores the creator's cgroup
 *    ancestors (struct owner, ipc.h) in the inode's storage (shm_owners),
 *    freed with the inode. A record that cannot be made refuses the
 *    creation (-ENOMEM).
 *  - Objects: regular files on that superblock. Own (its record's creator
 *    is in the subtree of the current task's sandbox) or outside (no
 *    record, or another creator: a file the host made, a host file hard-
 *    linked in, one made before the registration).
 *  - Decide (file.bpf.c), for every enforced process:
 *      every ceiling: opening an outside object (any mode), mapping it,
 *      unlinking, linking, renaming or replacing it, and changing its
 *      attributes are refused (RULE_IPC_OUTSIDE);
 *      under a write denial (write=false, a read_only shell's exec'd
 *      processes): creating a regular file in the directory itself,
 *      opening an own object for write or with O_TRUNC, writing it,
 *      mapping it shared-writable, truncating it, linking it to another
 *      name in the directory (sem_open's temporary -> sem.NAME) and
 *      unlinking it are allowed, for files without a set-user-ID or
 *      set-group-ID bit (shm_mode_plain: such a file is a program planted
 *      for the host, not an IPC object). Everything else stays a write: mkdir,
 *      symlink, mknod of anything but a regular file, rename, chmod,
 *      chown, utimes, xattrs and ACLs, ioctls.
 *
 * Cost for a process outside every sandbox: the programs that already
 * resolve its ceiling pay nothing more; open, mmap and inode allocation
 * add loads and compares on the inode (tmpfs, not a kernel-internal
 * mount, a regular file), and for files on a mounted tmpfs one resolve()
 * cache hit.
 */
#ifndef ENFORCERD_SHM_H
#define ENFORCERD_SHM_H

#include "ipc.h"

/* The POSIX shared memory directory of a registered cgroup: the root of a
 * tmpfs superblock, kernel dev_t (major<<20|minor) and inode number. */
struct ipc_dir {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64); /* cgroup v2 id of the registered cgroup */
	__type(value, struct ipc_dir);
} ipc_dirs SEC(".maps");

/* The creator of every file allocated on a registered shm superblock by
 * an enforced process, in the inode's storage. */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct owner);
} shm_owners SEC(".maps");

/* shm_candidate_sb: inode's superblock when it is a tmpfs some mount shows
 * (not the kernel's internal one: memfds, SysV shm, shared anonymous
 * memory), else NULL. Direct (BTF) loads: inode is a hook argument or a
 * pointer read from one with a BTF load. */
static __always_inline bool shm_candidate_magic(struct super_block *sb, unsigned long magic)
{
	return magic == TMPFS_MAGIC && !(sb->s_flags & SB_KERNMOUNT);
}

static __always_inline struct super_block *shm_candidate_sb(struct inode *inode)
{
	if (!inode)
		return NULL;
	struct super_block *sb = inode->i_sb;
	if (!sb || !shm_candidate_magic(sb, sb->s_magic))
		return NULL;
	return sb;
}

/* shm_candidate: a regular file on a mounted tmpfs (the pre-filter before
 * resolve() in hooks that do not resolve for every call). */
static __always_inline bool shm_candidate(struct inode *inode)
{
	return shm_candidate_sb(inode) && (inode->i_mode & S_IFMT) == S_IFREG;
}

/* shm_dir_of: the shm directory of the current task's sandbox (e resolved,
 * found), NULL when none is registered. */
static __always_inline struct ipc_dir *shm_dir_of(const struct effective *e)
{
	__u64 id = e->sandbox_cgid;
	if (!id)
		return NULL;
	return bpf_map_lookup_elem(&ipc_dirs, &id);
}

/* shm_on_dir: sb is the superblock of the sandbox's shm directory. */
static __always_inline bool shm_on_dir(const struct effective *e, struct super_block *sb)
{
	struct ipc_dir *d = shm_dir_of(e);
	return d && sb && d->dev == sb->s_dev;
}

enum shm_kind {
	SHM_NONE = 0,	 /* not an object of the sandbox's shm directory */
	SHM_OWN = 1,	 /* created by the sandbox */
	SHM_OUTSIDE = 2, /* created outside (or unrecorded) */
};

/* shm_kind_of: what inode is to the current task (e resolved, found). */
static __always_inline int shm_kind_of(const struct effective *e, struct inode *inode)
{
	struct super_block *sb = shm_candidate_sb(inode);
	if (!sb || (inode->i_mode & S_IFMT) != S_IFREG || !shm_on_dir(e, sb))
		return SHM_NONE;
	struct owner *o = bpf_inode_storage_get(&shm_owners, inode, 0, 0);
	return o && owner_inside(o, e) ? SHM_OWN : SHM_OUTSIDE;
}

/* shm_kind_dentry: the same for the inode of a dentry (negative: none). */
static __always_inline int shm_kind_dentry(const struct effective *e, struct dentry *d)
{
	if (!d)
		return SHM_NONE;
	return shm_kind_of(e, d->d_inode); /* a BTF load: see shm_candidate_sb */
}

/* shm_mode_plain: mode gives no set-user-ID or set-group-ID bit. An own
 * object with one is no IPC object but a program for the host to run
 * (/dev/shm is the host's under enforcerd run and --ipc=host): creating it,
 * writing it and linking it stay writes. */
static __always_inline bool shm_mode_plain(__u32 mode)
{
	return (mode & (S_ISUID | S_ISGID)) == 0;
}

/* shm_own_plain: d is an own object of the sandbox (e resolved, found)
 * with a plain mode (shm_mode_plain). */
static __always_inline bool shm_own_plain(const struct effective *e, struct dentry *d)
{
	if (shm_kind_dentry(e, d) != SHM_OWN)
		return false;
	struct inode *inode = d->d_inode; /* a BTF load: see shm_candidate_sb */
	return inode && shm_mode_plain(inode->i_mode);
}

/* shm_is_dir: p is the sandbox's shm directory itself (the root of its
 * superblock, with the registered inode number). */
static __always_inline bool shm_is_dir(const struct effective *e, struct dentry *p)
{
	if (!p)
		return false;
	struct super_block *sb = p->d_sb;
	struct inode *inode = p->d_inode;
	if (!sb || !inode || sb->s_root != p || sb->s_magic != TMPFS_MAGIC)
		return false;
	struct ipc_dir *d = shm_dir_of(e);
	return d && d->dev == sb->s_dev && d->ino == inode->i_ino;
}

/* shm_outside: the refusal of an operation on an object made outside
 * (every ceiling), for inode (ino in the record). */
static __always_inline int shm_outside(struct effective *e, struct inode *inode, __u16 hook)
{
	return tamper(e, hook, RULE_IPC_OUTSIDE, OBJ_NONE, BPF_CORE_READ(inode, i_ino));
}

/* shm_open_verdict: opening or mapping inode: refused when it is an object
 * made outside; 0 otherwise (an own object's writes are decided by the
 * write ceiling, which lifts them: write_verdict). */
static __always_inline int shm_open_verdict(struct inode *inode, __u16 hook)
{
	if (!shm_candidate(inode))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (shm_kind_of(&e, inode) != SHM_OUTSIDE)
		return 0;
	return shm_outside(&e, inode, hook);
}

/* shm_record_creator: at inode_alloc_security, record the current task as
 * the creator of a file on its sandbox's shm superblock. Returns 0, or the
 * error that refuses the creation when the record cannot be made. Pending
 * and unenforced processes make no record: their files are outside. */
static __always_inline int shm_record_creator(struct inode *inode, __u16 hook)
{
	struct super_block *sb = shm_candidate_sb(inode);
	if (!sb)
		return 0;
	struct effective e = {};
	if (!resolve(&e) || !shm_on_dir(&e, sb))
		return 0;
	struct owner *o = bpf_inode_storage_get(&shm_owners, inode, 0,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!o)
		return tamper(&e, hook, RULE_OWNER_UNRECORDED, OBJ_NONE, 0);
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
		o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
	return 0;
}

#endif /* ENFORCERD_SHM_H */
