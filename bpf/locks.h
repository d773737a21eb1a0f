/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Leases and exclusive locks on files the sandbox may not write (W10):
 * under write=false (and outside the writable roots when it has some),
 * a sandbox takes no lease and no exclusive lock on a file or directory.
 *
 *  - F_SETLEASE (fcntl, fcntl64): a lease of either kind makes every open
 *    for write elsewhere on the host wait for the holder, up to
 *    /proc/sys/fs/lease-break-time, each time; a read lease is allowed on a
 *    read-only descriptor of any file the caller owns (root owns the host's
 *    files). Decided at file_fcntl, which sees the command: file_lock sees
 *    only the lock type of a lease (vfs_setlease), not that it is one.
 *  - Exclusive locks (F_WRLCK) by flock(LOCK_EX), F_SETLK/F_SETLKW and
 *    F_OFD_SETLK/F_OFD_SETLKW: an exclusive flock needs only a read-only
 *    descriptor, and one on a package manager's or a firewall's lock file
 *    stalls host services. Decided at file_lock.
 *
 * Shared locks (F_RDLCK) and unlocking stay allowed: read-only work needs
 * them (SQLite takes a shared lock to read a database). That a shared lock
 * delays an outside writer that wants an exclusive one is a known limit.
 * Locks on anything but regular files and directories (FIFOs, sockets,
 * device nodes) are not decided here.
 *
 * "May write" is the write ceiling's decision on the file itself, as for an
 * open for write (file.bpf.c write_verdict, with writable roots lifting
 * it): the same decision, so a file the sandbox may write keeps every lock.
 */
#ifndef ENFORCERD_LOCKS_H
#define ENFORCERD_LOCKS_H

#include "exec.h"
#include "roots.h"

#define LOCK_F_RDLCK 0	/* struct flock.l_type (asm-generic/fcntl.h) */
#define LOCK_F_WRLCK 1
#define LOCK_F_UNLCK 2

/* lock_target: a regular file or a directory. Direct (BTF) loads: file is
 * the hook's argument. */
static __always_inline bool lock_target(struct file *file)
{
	struct inode *inode = file->f_inode;
	if (!inode)
		return true; /* fail closed: decide */
	__u32 fmt = inode->i_mode & S_IFMT;
	return fmt == S_IFREG || fmt == S_IFDIR;
}

/* lock_write_verdict: the write ceiling's decision on writing the file
 * itself (write_verdict in file.bpf.c for a regular file or directory,
 * whose roots_lift_target is always true). */
static __always_inline int lock_write_verdict(struct effective *e, struct file *file)
{
	task_write_denied(e);
	int v = verdict(e, DENY_WRITE);
	if (!v || !roots_apply(e))
		return v;
	int r = roots_check(file->f_path.dentry, file->f_path.mnt, false, v);
	if (!r && (e->audit & DENY_WRITE) && (e->seen & WR_AUDIT_TOTAL))
		return DECISION_AUDITED;
	return r;
}

/* lock_refuse: the verdict on taking a lease or an exclusive lock on file. */
static __always_inline int lock_refuse(struct file *file, __u16 hook)
{
	if (!lock_target(file))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int v = lock_write_verdict(&e, file);
	if (!v)
		return 0;
	record_event(&e, hook, v, DENY_WRITE, {
		fill_inode(ev, BPF_CORE_READ(file, f_inode));
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
	});
	return verdict_ret(v);
}

/* lease_fcntl: file_fcntl's part: F_SETLEASE of a read or write lease. */
static __always_inline int lease_fcntl(struct file *file, unsigned int cmd,
				       unsigned long arg)
{
	if (cmd != F_SETLEASE || arg == LOCK_F_UNLCK)
		return 0;
	return lock_refuse(file, HOOK_FILE_FCNTL);
}

/* lock_exclusive: file_lock's part: an exclusive lock (flock LOCK_EX,
 * POSIX and OFD F_WRLCK; a write lease arrives here too, after
 * file_fcntl refused it). */
static __always_inline int lock_exclusive(struct file *file, unsigned int type)
{
	if (type != LOCK_F_WRLCK)
		return 0;
	return lock_refuse(file, HOOK_FILE_LOCK);
}

#endif /* ENFORCERD_LOCKS_H */
