//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * write=false at BPF LSM file and inode hooks (product.md "Kernel meaning"):
 * no modification of any inode on any filesystem, by any path: open for write
 * or O_TRUNC, truncate, create, mkdir, rmdir, unlink, rename (incl.
 * RENAME_EXCHANGE), link, symlink, mknod, chmod, chown, utimes, xattrs and
 * POSIX ACLs, shared writable mmap, and writes through descriptors that were
 * open before the ceiling applied (file_permission runs on every write).
 *
 * Writes to pipes, sockets, character devices (ttys, /dev/null) and files on
 * kernel-internal mounts (memfd, anonymous inodes) stay allowed: they modify
 * no filesystem.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "exec.h"

char LICENSE[] SEC("license") = "GPL";

/* inode_exempt: objects whose "write" modifies no filesystem. */
static __always_inline bool inode_exempt(struct inode *inode)
{
	if (!inode)
		return false; /* fail closed: unknown object is a file */
	/* Direct (BTF) loads on hot paths: no helper call. */
	__u32 fmt = inode->i_mode & S_IFMT;
	return fmt == S_IFCHR || fmt == S_IFIFO || fmt == S_IFSOCK;
}

/* file_exempt adds files on kernel-internal mounts (MNT_INTERNAL: memfd,
 * SysV shm, anon inodes), which no path in any mount namespace reaches. */
static __always_inline bool file_exempt(struct file *file)
{
	struct inode *inode = file->f_inode;
	if (inode_exempt(inode))
		return true;
	/* /proc/<pid>/... files are process state, not a filesystem's: the
	 * write ceiling leaves them alone (tamper.bpf.c keeps a sandbox off
	 * processes outside it). */
	if (inode && proc_pid_of(inode))
		return true;
	struct vfsmount *mnt = file->f_path.mnt;
	return mnt && (mnt->mnt_flags & MNT_INTERNAL_FLAG) != 0;
}

static __always_inline void fill_inode(struct event *ev, struct inode *inode)
{
	ev->object_kind = OBJ_FILE;
	if (!inode)
		return;
	ev->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	ev->ino = BPF_CORE_READ(inode, i_ino);
	ev->mode = BPF_CORE_READ(inode, i_mode);
}

/* fill_names records the last EVENT_NAMES components of the dentry's path
 * within its filesystem (bpf_d_path is only allowed in sleepable hooks). */
static __always_inline void fill_names(struct event *ev, struct dentry *d)
{
	for (int i = 0; i < EVENT_NAMES; i++) {
		if (!d)
			return;
		const unsigned char *name = BPF_CORE_READ(d, d_name.name);
		bpf_probe_read_kernel_str(ev->names[i], EVENT_NAME_LEN, name);
		struct dentry *parent = BPF_CORE_READ(d, d_parent);
		if (parent == d)
			return; /* the filesystem root, named "/" */
		d = parent;
	}
}

static __always_inline void fill_dentry(struct event *ev, struct dentry *d)
{
	fill_inode(ev, BPF_CORE_READ(d, d_inode));
	fill_names(ev, d);
}

/* deny_write_dentry: the common body of the inode_* hooks. dir is the parent
 * directory when the hook has one (its identity is recorded if the dentry is
 * still negative, e.g. a create). */
static __always_inline int deny_write_dentry(struct dentry *d, __u16 hook)
{
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	task_write_denied(&e);
	int v = verdict(&e, DENY_WRITE);
	if (!v)
		return 0;
	struct event *ev = event_begin(&e, hook, v, DENY_WRITE, EPERM);
	if (ev) {
		fill_dentry(ev, d);
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

#define SB_KERNMOUNT (1U << 22)

/* dentry_exempt: pipes, sockets and char devices, and pseudo files (memfd):
 * a dentry that is its own parent without being its filesystem's root, on a
 * superblock only the kernel mounted (SB_KERNMOUNT). */
static __always_inline bool dentry_exempt(struct dentry *d)
{
	if (inode_exempt(d->d_inode))
		return true;
	struct super_block *sb = d->d_sb;
	if (d->d_parent != d || !sb || sb->s_root == d)
		return false;
	return (sb->s_flags & SB_KERNMOUNT) != 0;
}

/* Same, for modifications of an existing inode where exempt objects (pipes,
 * sockets, char devices, memfds) may be changed. */
static __always_inline int deny_modify_dentry(struct dentry *d, __u16 hook)
{
	if (dentry_exempt(d))
		return 0;
	return deny_write_dentry(d, hook);
}

/*
 * deny_write_file: the common body of hooks with a struct file. When the
 * write is allowed and mark is set, an inode written under a restricted
 * shell is marked (written_inodes) so it cannot be executed afterwards:
 * through a descriptor opened before the ceiling, a shared mapping, or open.
 */
static __always_inline int deny_write_file(struct file *file, __u16 hook,
					   bool mark)
{
	if (file_exempt(file))
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	task_write_denied(&e);
	int v = verdict(&e, DENY_WRITE);
	if (!v || v == DECISION_AUDITED) {
		if (mark && ((e.deny | e.audit) & (DENY_SHELL | DENY_SHELL_WRITE))) {
			__u64 *w = bpf_inode_storage_get(&written_inodes, file->f_inode, 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (w)
				*w = e.sandbox_cgid;
		}
		if (!v)
			return 0;
	}
	struct event *ev = event_begin(&e, hook, v, DENY_WRITE, EPERM);
	if (ev) {
		fill_inode(ev, BPF_CORE_READ(file, f_inode));
		fill_names(ev, BPF_CORE_READ(file, f_path.dentry));
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

#define BPF_FS_MAGIC 0xcafe4a11
#define TIOCSTI 0x5412
#define TIOCLINUX 0x541C
#define FIOSETOWN 0x8901
#define KMSG_RDEV ((1U << 20) | 11) /* /dev/kmsg, char 1:11 */
#define SIOCSPGRP 0x8902

/* E4: removing or replacing a pin (anything on a bpf filesystem), for every
 * enforced process whatever its write ceiling. */
static __always_inline int deny_bpffs(struct dentry *d)
{
	struct super_block *sb = d->d_sb;
	if (!sb || sb->s_magic != BPF_FS_MAGIC)
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	struct event *ev;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	ev = event_begin(&e, HOOK_BPFFS_UNLINK, v, DENY_TAMPER, EPERM);
	if (ev) {
		ev->object_kind = OBJ_FILE;
		ev->ino = BPF_CORE_READ(d, d_inode, i_ino);
		bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN,
					  BPF_CORE_READ(d, d_name.name));
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
}

/* W2/W5: open for write or with O_TRUNC (O_RDONLY|O_TRUNC truncates), by
 * open(2), openat2, or io_uring IORING_OP_OPENAT alike. */
SEC("lsm/file_open")
int BPF_PROG(file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	__u32 fmode = file->f_mode;
	__u32 fflags = file->f_flags;
	if (!(fmode & FMODE_WRITE) && !(fflags & O_TRUNC))
		return 0;
	return deny_write_file(file, HOOK_FILE_OPEN, true);
}

/* W4/W5: every write through a descriptor, including ones opened before the
 * ceiling applied, io_uring IORING_OP_WRITE, splice, copy_file_range,
 * fallocate and reflink (all pass rw_verify_area/security_file_permission). */
SEC("lsm/file_permission")
int BPF_PROG(file_permission, struct file *file, int mask, int ret)
{
	if (ret)
		return ret;
	if (!(mask & (MAY_WRITE | MAY_APPEND)))
		return 0;
	struct inode *inode = file->f_inode;
	if (inode && (inode->i_mode & S_IFMT) == S_IFCHR && inode->i_rdev == KMSG_RDEV) {
		/* Every ceiling, every write path (write, splice, io_uring, a
		 * descriptor from before the ceiling): the kernel log is the
		 * host's audit trail too; a sandbox writes no lines into it. */
		struct effective e = {};
		if (resolve(&e))
			return tamper(&e, HOOK_KMSG_WRITE, OBJ_NONE, 0);
		return 0;
	}
	return deny_write_file(file, HOOK_FILE_PERMISSION, true);
}

/* W2: ftruncate on kernels >= 6.2 (security_file_truncate). Optional hook. */
SEC("lsm/file_truncate")
int BPF_PROG(file_truncate, struct file *file, int ret)
{
	if (ret)
		return ret;
	return deny_write_file(file, HOOK_FILE_TRUNCATE, false);
}

/* W2: truncate(path), and ftruncate/O_TRUNC on kernels < 6.2. */
SEC("lsm/path_truncate")
int BPF_PROG(path_truncate, const struct path *path, int ret)
{
	if (ret)
		return ret;
	struct dentry *d = path->dentry;
	return deny_modify_dentry(d, HOOK_PATH_TRUNCATE);
}

/* Shared writable mapping of a file (needs a writable descriptor, e.g. one
 * inherited from before the ceiling); and, under a restricted shell, an
 * executable mapping of a memfd or of a file the sandbox wrote. */
SEC("lsm/mmap_file")
int BPF_PROG(mmap_file, struct file *file, unsigned long reqprot,
	     unsigned long prot, unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!file)
		return 0;
	if (prot & PROT_EXEC) {
		/* shell=none/read_only: no code from memfds or written files. */
		struct effective e = {};
		if (resolve(&e)) {
			int r = deny_code_mapping(&e, file);
			if (r)
				return r;
		}
	}
	if (!(prot & PROT_WRITE))
		return 0;
	if ((flags & 0x0f) != MAP_SHARED && (flags & 0x0f) != MAP_SHARED_VALIDATE)
		return 0;
	return deny_write_file(file, HOOK_MMAP_FILE, true);
}

/* mprotect(PROT_WRITE) of a shared file mapping made before the ceiling. */
SEC("lsm/file_mprotect")
int BPF_PROG(file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	     unsigned long prot, int ret)
{
	if (ret)
		return ret;
	struct file *file = vma->vm_file;
	if (!file)
		return 0;
	if (prot & PROT_EXEC) {
		struct effective e = {};
		if (resolve(&e)) {
			int r = deny_code_mapping(&e, file);
			if (r)
				return r;
		}
	}
	if (!(prot & PROT_WRITE))
		return 0;
	unsigned long vm_flags = BPF_CORE_READ(vma, vm_flags);
	if (!(vm_flags & VM_SHARED))
		return 0;
	return deny_write_file(file, HOOK_FILE_MPROTECT, true);
}

#define FS_IOC_SETFLAGS 0x40086602
#define FS_IOC_FSSETXATTR 0x401c5820

/* W3: inode attribute flags (chattr +i/+a) and project ids via ioctl. */
SEC("lsm/file_ioctl")
int BPF_PROG(file_ioctl, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (cmd == FIOSETOWN || cmd == SIOCSPGRP) {
		/* E4: like fcntl(F_SETOWN): only the caller may own the file's
		 * I/O signals (tamper.bpf.c file_fcntl, file_send_sigiotask). */
		int owner = 0;
		if (bpf_probe_read_user(&owner, sizeof(owner), (void *)arg) < 0)
			owner = -1; /* unreadable: fail closed */
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		if (owner == 0 || owner == (int)(pid_tgid >> 32) || owner == (int)(__u32)pid_tgid)
			return 0;
		struct effective e = {};
		if (!resolve(&e))
			return 0;
		return tamper(&e, HOOK_FILE_FCNTL, OBJ_TASK, owner);
	}
	if (cmd == TIOCSTI || cmd == TIOCLINUX) {
		/* X3: injecting input into a terminal (every ceiling). */
		struct effective e = {};
		if (!resolve(&e))
			return 0;
		return tamper(&e, HOOK_TTY_IOCTL, OBJ_NONE, cmd);
	}
	if (cmd != FS_IOC_SETFLAGS && cmd != FS_IOC_FSSETXATTR)
		return 0;
	return deny_write_file(file, HOOK_FILE_IOCTL, false);
}

/* W1: every creation of a directory entry, by any syscall or io_uring op. */
SEC("lsm/inode_create")
int BPF_PROG(inode_create, struct inode *dir, struct dentry *dentry,
	     umode_t mode, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_CREATE);
}

SEC("lsm/inode_link")
int BPF_PROG(inode_link, struct dentry *old_dentry, struct inode *dir,
	     struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(old_dentry, HOOK_INODE_LINK);
}

SEC("lsm/inode_unlink")
int BPF_PROG(inode_unlink, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(dentry))
		return -EPERM;
	return deny_write_dentry(dentry, HOOK_INODE_UNLINK);
}

SEC("lsm/inode_symlink")
int BPF_PROG(inode_symlink, struct inode *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_SYMLINK);
}

SEC("lsm/inode_mkdir")
int BPF_PROG(inode_mkdir, struct inode *dir, struct dentry *dentry,
	     umode_t mode, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_MKDIR);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(inode_rmdir, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(dentry))
		return -EPERM;
	return deny_write_dentry(dentry, HOOK_INODE_RMDIR);
}

/* mknod, mkfifo, and binding a unix socket to a path (it creates an inode). */
SEC("lsm/inode_mknod")
int BPF_PROG(inode_mknod, struct inode *dir, struct dentry *dentry,
	     umode_t mode, dev_t dev, int ret)
{
	if (ret)
		return ret;
	return deny_write_dentry(dentry, HOOK_INODE_MKNOD);
}

/* rename and renameat2 (RENAME_EXCHANGE calls the hook for both sides). */
SEC("lsm/inode_rename")
int BPF_PROG(inode_rename, struct inode *old_dir, struct dentry *old_dentry,
	     struct inode *new_dir, struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	if (deny_bpffs(old_dentry) || deny_bpffs(new_dentry))
		return -EPERM;
	return deny_write_dentry(old_dentry, HOOK_INODE_RENAME);
}

/* W3: chmod, chown, utimes (notify_change) and truncate's size change.
 * Linux 6.3 added a struct mnt_idmap * in front of the dentry; the loader
 * (enforcer) attaches the variant whose signature matches the kernel's BTF. */
SEC("lsm/inode_setattr")
int BPF_PROG(inode_setattr, struct mnt_idmap *idmap, struct dentry *dentry,
	     struct iattr *attr, int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_SETATTR);
}

SEC("lsm/inode_setattr")
int BPF_PROG(inode_setattr_pre63, struct dentry *dentry, struct iattr *attr,
	     int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_SETATTR);
}

/* W3: setxattr (6.1: also POSIX ACLs). The first argument is a struct
 * user_namespace * before 6.3 and a struct mnt_idmap * after; the position
 * of the dentry and the return value is the same. */
SEC("lsm/inode_setxattr")
int BPF_PROG(inode_setxattr, void *idmap, struct dentry *dentry,
	     const char *name, const void *value, size_t size, int flags,
	     int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_SETXATTR);
}

/* W3: removexattr. */
SEC("lsm/inode_removexattr")
int BPF_PROG(inode_removexattr, void *idmap, struct dentry *dentry,
	     const char *name, int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_REMOVEXATTR);
}

/* W3: POSIX ACLs on kernels >= 6.2 (vfs_set_acl). Optional hook. */
SEC("lsm/inode_set_acl")
int BPF_PROG(inode_set_acl, struct mnt_idmap *idmap, struct dentry *dentry,
	     const char *acl_name, struct posix_acl *kacl, int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_SET_ACL);
}

SEC("lsm/inode_remove_acl")
int BPF_PROG(inode_remove_acl, struct mnt_idmap *idmap, struct dentry *dentry,
	     const char *acl_name, int ret)
{
	if (ret)
		return ret;
	return deny_modify_dentry(dentry, HOOK_INODE_REMOVE_ACL);
}
