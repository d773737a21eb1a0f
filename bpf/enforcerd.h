/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by every enforcerd eBPF object: the ceiling map keyed by cgroup id,
 * the denial ring buffer, the event record, and the ancestor walk that turns
 * "which cgroup is current in" into "which ceiling applies".
 *
 * The Go side (enforcer/) creates the maps once, pins them, and hands the same
 * map to every object, so one Register() is seen by every hook.
 */
#ifndef ENFORCERD_H
#define ENFORCERD_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define EPERM 1
#define EACCES 13
#define ENOMEM 12

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000
#define S_IFCHR 0020000
#define S_IFBLK 0060000
#define S_IFIFO 0010000

#define FMODE_WRITE 0x2
#define O_TRUNC 00001000
#define MAY_WRITE 0x2
#define MAY_APPEND 0x8
#define PROT_WRITE 0x2
#define MAP_SHARED 0x01
#define MAP_SHARED_VALIDATE 0x03
#define VM_SHARED 0x8
#define MNT_INTERNAL_FLAG 0x4000

/* Bits of struct ceiling.deny: what a registered cgroup forbids. The meet of
 * two ceilings is the union of their deny bits, so the ancestor walk ORs. */
#define DENY_NETWORK (1U << 0)
#define DENY_WRITE (1U << 1)
#define DENY_SHELL (1U << 2)	    /* shell=none: exec only allowed files */
#define DENY_SHELL_WRITE (1U << 3) /* shell=read_only: exec'd processes are
				    * write-denied; no exec of memfds or of
				    * files the sandbox wrote */
#define DENY_TAMPER (1U << 4)	    /* implied by every registration: no bpf(),
				     * mounts, cgroup escape, ptrace/signals
				     * outside, pin removal, TIOCSTI */
#define DENY_ALL (DENY_NETWORK | DENY_WRITE | DENY_SHELL | DENY_SHELL_WRITE | DENY_TAMPER)
#define NUM_DENY_BITS 5

/* Bits of struct ceiling.flags. */
#define CEILING_AUDIT_ONLY (1U << 0) /* record would-be denials, allow */
#define CEILING_PENDING (1U << 1)    /* registered, not yet in force: the
				      * first exec in the subtree activates it
				      * (lifecycle.bpf.c) */
#define CEILING_PARTIAL_OK (1U << 2) /* accepted with partial coverage
				      * (enforcer.Entry.AllowPartial); the
				      * programs do not read it */

/* The ceiling one registered cgroup imposes on its whole subtree. */
struct ceiling {
	__u32 deny;
	__u32 flags;
};

/* Room for 65,536 registered containers (product requirement). */
#define MAX_CEILINGS 65536

/* Bounded ancestor walk. enforcer.Register refuses cgroups at level >=
 * MAX_CGROUP_LEVEL, so every enforced cgroup is seen by the walk; a process
 * deeper than the bound below an enforced cgroup is denied everything. */
#define MAX_CGROUP_LEVEL 32

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64); /* cgroup v2 id (kernfs inode number) */
	__type(value, struct ceiling);
} ceilings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* stats[STAT_LOST]: denial records dropped because the ring buffer was full.
 * Enforcement never waits on the ring buffer (threat model E6). */
enum stat_index {
	STAT_LOST = 0,
	STAT_MAX = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * enforcerd_config[0].generation changes (to a fresh random value from user space, or
 * an atomic increment from lifecycle.bpf.c) after every change of the
 * ceilings map. resolve() caches its result per cgroup id together with the
 * generation it was computed under, so a hook pays one hash lookup instead
 * of the ancestor walk, and any change invalidates every cached result.
 * Order that keeps this correct: writers change ceilings first, then the
 * generation; resolve() reads the generation first, then walks.
 */
struct enforcerd_config {
	__u64 generation;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct enforcerd_config);
} enforcerd_config SEC(".maps");

/* Hook identifiers in event.hook; names in enforcer/hooks.go. */
enum hook_id {
	HOOK_SOCKET_CREATE = 1,
	HOOK_SOCKET_BIND,
	HOOK_SOCKET_CONNECT,
	HOOK_SOCKET_LISTEN,
	HOOK_SOCKET_ACCEPT,
	HOOK_SOCKET_SENDMSG,
	HOOK_SOCKET_RECVMSG,
	HOOK_UNIX_STREAM_CONNECT,
	HOOK_UNIX_MAY_SEND,
	HOOK_FILE_OPEN,
	HOOK_FILE_PERMISSION,
	HOOK_FILE_TRUNCATE,
	HOOK_PATH_TRUNCATE,
	HOOK_MMAP_FILE,
	HOOK_FILE_MPROTECT,
	HOOK_FILE_IOCTL,
	HOOK_INODE_CREATE,
	HOOK_INODE_LINK,
	HOOK_INODE_UNLINK,
	HOOK_INODE_SYMLINK,
	HOOK_INODE_MKDIR,
	HOOK_INODE_RMDIR,
	HOOK_INODE_MKNOD,
	HOOK_INODE_RENAME,
	HOOK_INODE_SETATTR,
	HOOK_INODE_SETXATTR,
	HOOK_INODE_REMOVEXATTR,
	HOOK_INODE_SET_ACL,
	HOOK_INODE_REMOVE_ACL,
	HOOK_CGROUP_SOCK_CREATE,
	HOOK_CGROUP_CONNECT4,
	HOOK_CGROUP_CONNECT6,
	HOOK_CGROUP_SENDMSG4,
	HOOK_CGROUP_SENDMSG6,
	HOOK_BPRM_CHECK_SECURITY,
	HOOK_BPF,
	HOOK_PTRACE_ACCESS_CHECK,
	HOOK_TASK_KILL,
	HOOK_INODE_PERMISSION,
	HOOK_SB_MOUNT,
	HOOK_SB_UMOUNT,
	HOOK_SB_REMOUNT,
	HOOK_MOVE_MOUNT,
	HOOK_SB_PIVOTROOT,
	HOOK_TTY_IOCTL,
	HOOK_BPFFS_UNLINK,
	HOOK_PTRACE_TRACEME,
	HOOK_FILE_FCNTL,
	HOOK_CAPABLE,
	HOOK_KERNEL_SETTING, /* inode_permission on a kernel tunable */
	HOOK_KERNEL_MODULE_REQUEST,
	HOOK_TASK_SETSCHED, /* nice, ioprio, scheduler, affinity, prlimit */
	HOOK_PROC_WRITE,    /* inode_permission on /proc/<pid> of an outsider */
	HOOK_KMSG_WRITE,    /* file_open of /dev/kmsg for write */
	HOOK_SOCKET_GETSOCKOPT,
	HOOK_SOCKET_SETSOCKOPT,
	HOOK_SOCKET_SHUTDOWN,
	HOOK_FILE_IOCTL_COMPAT,
	HOOK_URING_CMD,
	HOOK_IPC_PERMISSION,
	HOOK_SHM_SHMAT,
	HOOK_IPC_ASSOCIATE, /* shm_associate, msg_queue_associate, sem_associate */
	HOOK_KEY_ALLOC,
	HOOK_KEY_PERMISSION,
	HOOK_TASK_SETRLIMIT,
};

/* event.object_kind */
#define OBJ_NONE 0
#define OBJ_FILE 1   /* dev, ino, mode, and up to EVENT_NAMES path
		      * components within the filesystem, leaf first */
#define OBJ_SOCKET 2 /* family, type, protocol, port, addr */
#define OBJ_TASK 3   /* ino = target process id (signal, ptrace) */
#define OBJ_CGROUP 4 /* ino = target cgroup id (leaving the subtree) */
#define OBJ_BPF_CMD 5 /* ino = bpf() command */
#define OBJ_MOUNT 6  /* mount operations: no object */
#define OBJ_CAPABILITY 7 /* ino = capability number */
#define OBJ_FSMAGIC 8    /* ino = filesystem magic of a kernel tunable */

/* event.decision */
#define DECISION_DENIED 1
#define DECISION_AUDITED 2

#define EVENT_NAMES 4
#define EVENT_NAME_LEN 64

/* One denial record. Layout is mirrored by bpf2go (-type event). */
struct event {
	__u64 time_ns;		 /* bpf_ktime_get_boot_ns */
	__u64 cgroup_id;	 /* the process's own cgroup */
	__u64 ceiling_cgroup_id; /* the registered cgroup whose ceiling decided */
	__u32 pid;		 /* thread id */
	__u32 tgid;		 /* process id */
	__u32 uid;
	__u16 hook;	  /* enum hook_id */
	__u16 decision;	  /* DECISION_* */
	__s32 err;	  /* errno returned (positive), 0 when audited */
	__u32 deny_bit;	  /* DENY_* that applied */
	__u32 object_kind; /* OBJ_* */
	__u32 dev;
	__u64 ino;
	__u32 mode;
	__u16 family;
	__u16 port; /* host byte order */
	__u32 sock_type;
	__u32 protocol;
	__u8 addr[16];
	__u8 comm[16];
	char names[EVENT_NAMES][EVENT_NAME_LEN]; /* leaf first; "/" = fs root */
};


/* The result of the ancestor walk for the current task. */
struct effective {
	__u32 deny;  /* union of deny bits of enforcing ancestors */
	__u32 audit; /* union of deny bits of audit-only ancestors */
	__u64 deny_cgid[NUM_DENY_BITS];	 /* deepest enforcing cgroup per bit */
	__u64 audit_cgid[NUM_DENY_BITS]; /* deepest audit-only cgroup per bit */
	__s32 net_level;     /* level of the deepest cgroup denying network, -1 */
	__s32 sandbox_level; /* level of the deepest registered cgroup, -1 */
	__s32 pending;	     /* some ancestor's registration is still pending:
			      * the next exec is an entrypoint (exec.bpf.c,
			      * lifecycle.bpf.c); set even when nothing is
			      * enforced yet */
	__u64 sandbox_cgid;  /* its id: the sandbox boundary for "outside" */
};

static __always_inline int bit_index(__u32 bit)
{
	switch (bit) {
	case DENY_NETWORK:
		return 0;
	case DENY_WRITE:
		return 1;
	case DENY_SHELL:
		return 2;
	case DENY_SHELL_WRITE:
		return 3;
	default:
		return 4;
	}
}

/*
 * walk visits the current task's cgroup ancestors from the root (level 0)
 * down, and ORs the deny bits of every registered, active ceiling: the meet of
 * every enforced ancestor (threat model E1: a sub-cgroup the child creates is
 * still below the registered one, so it can never widen anything).
 *
 * Fail direction: a process below an enforced cgroup but deeper than
 * MAX_CGROUP_LEVEL is denied everything; a pending entry is not yet in force.
 * Sets found when any ancestor is registered (enforced or audited).
 *
 * One level per bpf_loop() callback: the verifier checks the body once, not
 * once per level, which keeps loading fast and within the 6.1 verifier.
 */
struct resolve_cache_entry {
	__u64 generation;
	__s32 found;
	__u32 pad;
	struct effective e;
};

/* The walk fills a cache entry in place (one copy on the stack: the
 * callers' frames and resolve()'s add up against the verifier's combined
 * stack limit). */
struct walk_ctx {
	struct resolve_cache_entry n;
	int done;
};

static long walk_level(__u32 level, void *ctx)
{
	struct walk_ctx *w = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id) {
		w->done = 1;
		return 1;
	}
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c)
		return 0;
	__u32 flags = c->flags;
	/* Every registration implies tamper protection. */
	__u32 deny = (c->deny & DENY_ALL) | DENY_TAMPER;
	if (flags & CEILING_PENDING) {
		w->n.e.pending = 1;
		return 0;
	}
	w->n.found = 1;
	w->n.e.sandbox_level = level;
	w->n.e.sandbox_cgid = id;
	__u64 *cgid = w->n.e.deny_cgid;
	if (flags & CEILING_AUDIT_ONLY) {
		w->n.e.audit |= deny;
		cgid = w->n.e.audit_cgid;
	} else {
		w->n.e.deny |= deny;
	}
	if (deny & DENY_NETWORK) {
		cgid[0] = id;
		w->n.e.net_level = level;
	}
	if (deny & DENY_WRITE)
		cgid[1] = id;
	if (deny & DENY_SHELL)
		cgid[2] = id;
	if (deny & DENY_SHELL_WRITE)
		cgid[3] = id;
	cgid[4] = id; /* DENY_TAMPER */
	return 0;
}

/* walk fills w->n (found, e) for the current task. */
static __always_inline void walk(struct walk_ctx *w)
{
	w->n.e.net_level = -1;
	w->n.e.sandbox_level = -1;
	bpf_loop(MAX_CGROUP_LEVEL, walk_level, w, 0);
	/* Deeper than the bound: if anything above was enforced, deny all. */
	if (!w->done && w->n.found &&
	    bpf_get_current_ancestor_cgroup_id(MAX_CGROUP_LEVEL))
		w->n.e.deny |= DENY_ALL;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* current cgroup id */
	__type(value, struct resolve_cache_entry);
} resolve_cache SEC(".maps");

/* resolve: walk(), through the per-cgroup cache (see struct enforcerd_config). */
__attribute__((noinline)) int resolve(struct effective *e)
{
	if (!e)
		return 0;
	__u32 zero = 0;
	struct walk_ctx w = {};
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	if (!cfg) {
		/* cannot happen for an array; never skip */
		walk(&w);
		__builtin_memcpy(e, &w.n.e, sizeof(*e));
		return w.n.found;
	}
	__u64 gen = cfg->generation;
	__u64 id = bpf_get_current_cgroup_id();
	struct resolve_cache_entry *c = bpf_map_lookup_elem(&resolve_cache, &id);
	if (c && c->generation == gen) {
		if (!c->found) {
			/* the common case: a process nobody enforces */
			e->pending = c->e.pending;
			return 0;
		}
		__builtin_memcpy(e, &c->e, sizeof(*e));
		return 1;
	}
	walk(&w);
	w.n.generation = gen;
	bpf_map_update_elem(&resolve_cache, &id, &w.n, BPF_ANY);
	__builtin_memcpy(e, &w.n.e, sizeof(*e));
	return w.n.found;
}

/*
 * cgroup_in_subtree reports whether cg is the cgroup with id `id` at `level`
 * or one of its descendants (cg->ancestors[level] is that cgroup). Fail
 * direction: anything unreadable is outside.
 */
static __always_inline bool cgroup_in_subtree(struct cgroup *cg, int level,
					      __u64 id)
{
	if (!cg || level < 0 || level >= MAX_CGROUP_LEVEL)
		return false;
	int cl = BPF_CORE_READ(cg, level);
	if (cl < level)
		return false;
	struct cgroup *anc = NULL;
	bpf_probe_read_kernel(&anc, sizeof(anc), &cg->ancestors[level]);
	if (!anc)
		return false;
	return BPF_CORE_READ(anc, kn, id) == id;
}

/* verdict for one deny bit: 0 allow, DECISION_DENIED, DECISION_AUDITED. */
static __always_inline int verdict(const struct effective *e, __u32 bit)
{
	if (e->deny & bit)
		return DECISION_DENIED;
	if (e->audit & bit)
		return DECISION_AUDITED;
	return 0;
}

static __always_inline void count_lost(void)
{
	__u32 k = STAT_LOST;
	__u64 *v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		*v += 1;
}

/*
 * event_begin reserves a record and fills the subject. On a full ring buffer
 * it counts the loss and returns NULL: the caller still denies.
 */
static __always_inline struct event *event_begin(const struct effective *e,
						 __u16 hook, int decision,
						 __u32 bit, int err)
{
	struct event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_lost();
		return NULL;
	}
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	ev->time_ns = bpf_ktime_get_boot_ns();
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->ceiling_cgroup_id = decision == DECISION_DENIED ?
		e->deny_cgid[bit_index(bit)] : e->audit_cgid[bit_index(bit)];
	ev->pid = (__u32)pid_tgid;
	ev->tgid = pid_tgid >> 32;
	ev->uid = (__u32)bpf_get_current_uid_gid();
	ev->hook = hook;
	ev->decision = decision;
	ev->err = decision == DECISION_DENIED ? err : 0;
	ev->deny_bit = bit;
	ev->object_kind = OBJ_NONE;
	ev->dev = 0;
	ev->ino = 0;
	ev->mode = 0;
	ev->family = 0;
	ev->port = 0;
	ev->sock_type = 0;
	ev->protocol = 0;
	__builtin_memset(ev->addr, 0, sizeof(ev->addr));
#pragma unroll
	for (int i = 0; i < EVENT_NAMES; i++)
		ev->names[i][0] = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	return ev;
}

/* What a hook returns for a verdict: -EPERM when denied, else 0. Each
 * constant is materialised by its own asm statement so clang cannot fold the
 * choice into -(decision & 1): the 6.12 verifier does not track BPF_NEG and
 * would reject the program's return value as unbounded. */
static __always_inline int verdict_ret(int decision)
{
	int r;
	if (decision == DECISION_DENIED)
		asm volatile("%0 = -1" : "=r"(r)); /* -EPERM */
	else
		asm volatile("%0 = 0" : "=r"(r));
	return r;
}

#define PROC_SUPER_MAGIC 0x9fa0

/* proc_inode_of: the struct proc_inode around a procfs inode. */
static __always_inline struct proc_inode *proc_inode_of(struct inode *inode)
{
	return (struct proc_inode *)((void *)inode -
				     bpf_core_field_offset(struct proc_inode, vfs_inode));
}

/* proc_pid_of: for a /proc/<pid>/... inode, the struct pid it describes;
 * NULL for every other procfs inode (and for non-procfs inodes). */
static __always_inline struct pid *proc_pid_of(struct inode *inode)
{
	struct super_block *sb = inode->i_sb;
	if (!sb || sb->s_magic != PROC_SUPER_MAGIC)
		return NULL;
	return BPF_CORE_READ(proc_inode_of(inode), pid);
}

/* pid_task_of: the task a struct pid names (its PIDTYPE_PID task), NULL if
 * it has exited. */
static __always_inline struct task_struct *pid_task_of(struct pid *pid)
{
	struct hlist_node *first = BPF_CORE_READ(pid, tasks[0].first);
	if (!first)
		return NULL;
	return (struct task_struct *)((void *)first -
		bpf_core_field_offset(struct task_struct, pid_links));
}

/* task_outside: p's cgroup is not in the current sandbox's subtree. Fail
 * direction: anything unreadable is outside. */
static __always_inline bool task_outside(struct effective *e,
					 struct task_struct *p)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	return !cgroup_in_subtree(cg, e->sandbox_level, e->sandbox_cgid);
}

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

#define S_IFDIR 0040000
#define CGROUP2_SUPER_MAGIC 0x63677270
#define CGROUP_SUPER_MAGIC 0x27e0eb
#define SYSFS_MAGIC 0x62656572
#define SECURITYFS_MAGIC 0x73636673
#define DEBUGFS_MAGIC 0x64626720
#define TRACEFS_MAGIC 0x74726163
#define CONFIGFS_MAGIC 0x62656570
#define EFIVARFS_MAGIC 0xde5e81e4
#define PSTOREFS_MAGIC 0x6165676c
#define BINFMTFS_MAGIC 0x42494e4d

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

/* struct file embedded its fown_struct before Linux 6.12 and points to
 * one since. Field-existence checks on these flavours also match the
 * field's type, so exactly one of them relocates on a given kernel. */
struct file___owner_embedded {
	struct fown_struct f_owner;
} __attribute__((preserve_access_index));

struct file___owner_ptr {
	struct fown_struct *f_owner;
} __attribute__((preserve_access_index));

#define PIDTYPE_PID 0
#define PIDTYPE_TGID 1

/* owner_outside: the descriptor's SIGIO/SIGURG owner (set by F_SETOWN or
 * FIOSETOWN, possibly before the ceiling) is a process outside the
 * sandbox. Process groups count as outside (fail closed). */
static __always_inline bool owner_outside(struct effective *e, struct file *file)
{
	struct fown_struct *fo;
	if (bpf_core_field_exists(struct file___owner_ptr, f_owner))
		fo = BPF_CORE_READ((struct file___owner_ptr *)file, f_owner);
	else if (bpf_core_field_exists(struct file___owner_embedded, f_owner))
		fo = (struct fown_struct *)((void *)file +
			bpf_core_field_offset(struct file___owner_embedded, f_owner));
	else
		return true; /* unknown layout: fail closed */
	if (!fo)
		return false; /* no owner was ever set */
	struct pid *pid = BPF_CORE_READ(fo, pid);
	if (!pid)
		return false;
	int type = BPF_CORE_READ(fo, pid_type);
	if (type != PIDTYPE_PID && type != PIDTYPE_TGID)
		return true;
	struct task_struct *t = pid_task_of(pid);
	return !t || task_outside(e, t);
}

/* tamper: the verdict and record for an escape/tamper attempt (every
 * registration implies DENY_TAMPER). */
static __always_inline int tamper(struct effective *e, __u16 hook,
				  __u32 kind, __u64 target)
{
	int v = verdict(e, DENY_TAMPER);
	if (!v)
		return 0;
	struct event *ev = event_begin(e, hook, v, DENY_TAMPER, EPERM);
	if (ev) {
		ev->object_kind = kind;
		ev->ino = target;
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict_ret(v);
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

/* kernel_fs_magic: filesystems whose files are kernel interfaces (tunables,
 * cgroups, pins, security policy), not storage. */
static __always_inline bool kernel_fs_magic(__u64 magic)
{
	switch (magic) {
	case CGROUP2_SUPER_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case SECURITYFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case CONFIGFS_MAGIC:
	case EFIVARFS_MAGIC:
	case PSTOREFS_MAGIC:
	case BINFMTFS_MAGIC: /* binfmt_misc: registers interpreters run for
			      * every exec on the host */
		return true;
	}
	return false;
}

/*
 * deny_kernel_write: E2/E4/K1/K3, a write to a kernel interface file by an
 * enforced process, decided at inode_permission (every open for write,
 * mkdir, every cgroup migration) and again at file_permission (every write
 * through a descriptor, including one opened outside and passed in):
 *  - cgroup2: a file or directory of a cgroup outside the sandbox subtree.
 *    The kernel asks for write permission on the common ancestor's
 *    cgroup.procs for every migration (write to cgroup.procs, clone3 with
 *    CLONE_INTO_CGROUP), so a move out of the subtree is refused, and so
 *    are cgroup.kill/cgroup.freeze/limits of outside cgroups;
 *  - K3: the registered cgroup's own interface files: under cgroup v2
 *    delegation its resource files (memory.*, pids.*, cpu.*, io.*,
 *    cgroup.max.*, ...) belong to its parent; only cgroup.procs,
 *    cgroup.threads and cgroup.subtree_control are the sandbox's.
 *    Sub-cgroups the sandbox creates are entirely its own;
 *  - K1: procfs is an allow list: only /proc/<pid>/... of the sandbox's own
 *    processes (oom_score_adj, uid_map, attr, comm, ...). /proc/sys,
 *    sysrq-trigger, irq affinities, PCI configuration space (/proc/bus/pci),
 *    dynamic_debug, /proc/net and whatever a kernel adds next are denied;
 *  - every other kernel interface filesystem (kernel_fs_magic).
 */
static __always_inline int deny_kernel_write(struct effective *e, struct inode *inode,
					     __u64 magic)
{
	if (magic == PROC_SUPER_MAGIC) {
		struct pid *ppid = proc_pid_of(inode);
		if (!ppid)
			return tamper(e, HOOK_KERNEL_SETTING, OBJ_FSMAGIC, magic);
		struct task_struct *target = pid_task_of(ppid);
		if (!target)
			return 0; /* the process is gone: nothing to change */
		if (!task_outside(e, target))
			return 0;
		return tamper(e, HOOK_PROC_WRITE, OBJ_TASK, BPF_CORE_READ(target, tgid));
	}
	if (magic != CGROUP2_SUPER_MAGIC)
		return tamper(e, HOOK_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	struct kernfs_node *file_kn;
	struct cgroup *cg = cgroup_of_kernfs_inode(inode, &file_kn);
	if (!cg)
		return tamper(e, HOOK_KERNEL_SETTING, OBJ_FSMAGIC, magic);
	if (!cgroup_in_subtree(cg, e->sandbox_level, e->sandbox_cgid))
		return tamper(e, HOOK_INODE_PERMISSION, OBJ_CGROUP, BPF_CORE_READ(cg, kn, id));
	if (!file_kn || BPF_CORE_READ(cg, level) > e->sandbox_level)
		return 0; /* a directory (mkdir below it), or a sub-cgroup */
	const char *name = BPF_CORE_READ(file_kn, name);
	if (name_is(name, "cgroup.procs", 13) || name_is(name, "cgroup.threads", 15) ||
	    name_is(name, "cgroup.subtree_control", 23))
		return 0;
	return tamper(e, HOOK_INODE_PERMISSION, OBJ_CGROUP, BPF_CORE_READ(cg, kn, id));
}

#endif /* ENFORCERD_H */
