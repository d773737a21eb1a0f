/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The denial record: which hook decided, on which object, and how a hook
 * writes one (build in a scratch slot, count in the tally, and put the first
 * of its kind into the events ring buffer: tally.h, maps.h).
 * enforcer (Go) decodes it with the bpf2go mirror of struct event.
 */
#ifndef ENFORCERD_EVENT_H
#define ENFORCERD_EVENT_H

#include "walk.h"
#include "tally.h"

/* Hook identifiers in event.hook; names and operations in enforcer/hooks.go.
 * Records carry the number: never renumber, only append. */
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
	HOOK_TTY_IOCTL,	   /* no longer recorded (schema 2: file_ioctl, rule
			    * tty-inject); decoded for records of older
			    * programs */
	HOOK_BPFFS_UNLINK, /* no longer recorded (inode_unlink, pin-removal) */
	HOOK_PTRACE_TRACEME,
	HOOK_FILE_FCNTL,
	HOOK_CAPABLE,
	HOOK_KERNEL_SETTING, /* no longer recorded (inode_permission,
			      * kernel-setting) */
	HOOK_KERNEL_MODULE_REQUEST,
	HOOK_TASK_SETSCHEDULER, /* task_setscheduler (schema 2 also: nice,
				 * ioprio, prlimit) */
	HOOK_PROC_WRITE,	/* no longer recorded (inode_permission,
				 * proc-outside) */
	HOOK_KMSG_WRITE,	/* no longer recorded (file_permission, kmsg) */
	HOOK_SOCKET_GETSOCKOPT,
	HOOK_SOCKET_SETSOCKOPT,
	HOOK_SOCKET_SHUTDOWN,
	HOOK_FILE_IOCTL_COMPAT,
	HOOK_URING_CMD,
	HOOK_IPC_PERMISSION,
	HOOK_SHM_SHMAT,
	HOOK_SHM_ASSOCIATE, /* schema 2 also: msg_queue_associate, sem_associate */
	HOOK_KEY_ALLOC,
	HOOK_KEY_PERMISSION,
	HOOK_TASK_SETRLIMIT,
	/* Schema 3: every LSM program records its own hook. */
	HOOK_TASK_SETNICE,
	HOOK_TASK_SETIOPRIO,
	HOOK_TASK_PRLIMIT,
	HOOK_FILE_SEND_SIGIOTASK,
	HOOK_SHM_SHMCTL,
	HOOK_MSG_QUEUE_MSGCTL,
	HOOK_SEM_SEMCTL,
	HOOK_MSG_QUEUE_ASSOCIATE,
	HOOK_SEM_ASSOCIATE,
	HOOK_SHM_ALLOC_SECURITY,
	HOOK_MSG_QUEUE_ALLOC_SECURITY,
	HOOK_SEM_ALLOC_SECURITY,
	/* Attached, but never refuse with a record (named for completeness:
	 * every attached hook has an id). */
	HOOK_BPRM_COMMITTED_CREDS,
	HOOK_TASK_ALLOC,
	HOOK_SHM_FREE_SECURITY,
	HOOK_MSG_QUEUE_FREE_SECURITY,
	HOOK_SEM_FREE_SECURITY,
	HOOK_KEY_FREE,
	HOOK_INODE_ALLOC_SECURITY, /* mqueue.h: a queue whose creator could
				    * not be recorded */
	HOOK_FILE_LOCK,
	HOOK_TASK_PRCTL,
	HOOK_D_INSTANTIATE, /* attached, never refuses (fifo.h; devices.h:
			     * pty creation) */
	HOOK_INODE_FREE_SECURITY, /* devices.h: a pty's end (never refuses) */
	HOOK_FILE_RECEIVE,
	HOOK_TASK_SETPGID,
};

/*
 * Rule identifiers: which protection decided, in the bits RULE_SHIFT and up
 * of event.deny_bit (and so of the tally keys: denials of different rules
 * stay distinct). RULE_FIELD (0) is the ceiling field's own rule (network,
 * write, shell). Names in enforcer/hooks.go (ruleTable); never renumber,
 * only append.
 */
enum rule_id {
	RULE_FIELD = 0,
	RULE_BPF_SYSCALL,	 /* bpf() */
	RULE_PTRACE_OUTSIDE,	 /* ptrace of / by a process outside */
	RULE_SIGNAL_OUTSIDE,	 /* a signal to a process outside */
	RULE_SIGIO_OWNER,	 /* I/O signals owned by a process outside */
	RULE_KERNEL_SETTING,	 /* a write to a kernel interface filesystem */
	RULE_CGROUP_OUTSIDE,	 /* a cgroup outside the sandbox subtree */
	RULE_CGROUP_OWN_LIMITS,	 /* the registered cgroup's own resource files */
	RULE_PROC_OUTSIDE,	 /* /proc/<pid> of a process outside */
	RULE_PROC_PID_FILE,	 /* a /proc/<pid> file acting beyond its process */
	RULE_KMSG,		 /* a write to /dev/kmsg */
	RULE_MOUNT,		 /* a mount table change */
	RULE_CAPABILITY,	 /* a capability off the allow list */
	RULE_KERNEL_MODULE,	 /* a module load request */
	RULE_PROCESS_OUTSIDE,	 /* priority, scheduling or limits of a process outside */
	RULE_CORE_DUMP_LIMIT,	 /* RLIMIT_CORE other than 1 */
	RULE_URING_CMD,		 /* io_uring command passthrough */
	RULE_IPC_OUTSIDE,	 /* an IPC object (SysV, POSIX message queue, POSIX shm or semaphore)
				  * created outside */
	RULE_OWNER_UNRECORDED,	 /* an IPC object or key whose creator, or a
				  * descriptor whose signal arrangement
				  * (sigio.h), could not be recorded */
	RULE_KEY_REQUEST_AUTH,	 /* a request_key authorisation key */
	RULE_KEY_OUTSIDE,	 /* a key created outside */
	RULE_PIN_REMOVAL,	 /* removing or replacing a bpffs pin */
	RULE_KERNEL_ATTR,	 /* attributes of a kernel interface file */
	RULE_RAW_STORAGE,	 /* raw block or passthrough storage writes */
	RULE_TTY_INJECT,	 /* terminal input injection, console state */
	RULE_CODE_MAPPING,	 /* shell: executable mapping of a written file */
	RULE_SHELL_PTRACE,	 /* shell=read_only: ptrace of a writer */
	RULE_EXEC_OPEN,		 /* shell: an open for exec of a file neither
				  * listed nor a vetted program interpreter */
	RULE_TASK_NAME,		 /* setting the task name (comm) */
	RULE_HOST_DEVICE,	 /* a device node off the allow list */
	RULE_TERMINAL_OUTSIDE,	 /* a terminal neither declared own nor
				  * created inside: beyond a read-only query */
	RULE_CONSOLE_EGRESS,	 /* network=false: an own terminal that leaves
				  * the machine (console, serial line) */
};

enum rule_layout {
	RULE_SHIFT = 16, /* event.deny_bit >> RULE_SHIFT is the rule */
};

/* set_rule tags a record with the rule that decided (inside record_event). */
#define set_rule(ev, rule) ((ev)->deny_bit |= (__u32)(rule) << RULE_SHIFT)

/* event.object_kind: which object fields of the record are set. */
enum object_kind {
	OBJ_NONE = 0,	    /* no object; event.arg may hold the request's
			     * argument (an ioctl request, an IPC id, a key
			     * serial, an rlimit resource) */
	OBJ_FILE = 1,	    /* dev, ino, mode, and up to EVENT_NAMES path
			     * components within the filesystem, leaf first */
	OBJ_SOCKET = 2,	    /* family, type, protocol, port, addr; for a unix
			     * peer created outside: ino of the peer */
	OBJ_TASK = 3,	    /* pid: target process id (signal, ptrace) */
	OBJ_CGROUP = 4,	    /* target_cgroup_id (leaving the subtree) */
	OBJ_BPF_CMD = 5,    /* bpf_cmd: the bpf() command */
	OBJ_MOUNT = 6,	    /* mount operations: no object */
	OBJ_CAPABILITY = 7, /* capability: its number */
	OBJ_FSMAGIC = 8,    /* fs_magic: filesystem of a kernel tunable */
};

#define EVENT_NAMES 4
#define EVENT_NAME_LEN 64
#define EVENT_NAME_WORDS (EVENT_NAMES * EVENT_NAME_LEN / 8) /* names as __u64 */

/* One denial record. Layout is mirrored by bpf2go (-type event) and read by
 * enforcerd builds before and after an upgrade: append nothing, move
 * nothing. */
struct event {
	__u64 time_ns;		 /* bpf_ktime_get_boot_ns */
	__u64 cgroup_id;	 /* the process's own cgroup */
	__u64 ceiling_cgroup_id; /* the registered cgroup whose ceiling decided */
	__u32 pid;		 /* thread id */
	__u32 tgid;		 /* process id */
	__u32 uid;
	__u16 hook;	   /* enum hook_id */
	__u16 decision;	   /* enum decision */
	__s32 err;	   /* errno returned (positive), 0 when audited */
	__u32 deny_bit;	   /* enum deny_bit that applied; bits RULE_SHIFT
			    * and up: enum rule_id */
	__u32 object_kind; /* enum object_kind */
	__u32 dev;
	/* The number that identifies the object; object_kind says which
	 * member is meant (Go sees the first). */
	union {
		__u64 object_id;
		__u64 ino;		/* OBJ_FILE; OBJ_SOCKET: unix peer */
		__u64 target_pid;	/* OBJ_TASK */
		__u64 target_cgroup_id; /* OBJ_CGROUP */
		__u64 bpf_cmd;		/* OBJ_BPF_CMD */
		__u64 capability;	/* OBJ_CAPABILITY */
		__u64 fs_magic;		/* OBJ_FSMAGIC */
		__u64 arg;		/* OBJ_NONE */
	};
	__u32 mode;
	__u16 family;
	__u16 port; /* host byte order */
	__u32 sock_type;
	__u32 protocol;
	__u8 addr[16];
	__u8 comm[16];
	char names[EVENT_NAMES][EVENT_NAME_LEN]; /* leaf first; "/" = fs root */
};

/* A record being built, in a per-CPU slot of event_scratch (tally.h). */
struct event_scratch {
	__u64 busy; /* 1 while a program builds a record in this slot */
	__u64 zero; /* scratch value for map updates */
	struct tally_key key;
	struct tally_overflow_key okey;
	struct event ev;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct event_scratch);
} event_scratch SEC(".maps");

/* scratch_get takes a free slot of this CPU's scratch, or returns NULL. */
static __always_inline struct event_scratch *scratch_get(void)
{
#pragma unroll
	for (__u32 i = 0; i < SCRATCH_SLOTS; i++) {
		__u32 k = i;
		struct event_scratch *s = bpf_map_lookup_elem(&event_scratch, &k);
		if (s && __sync_val_compare_and_swap(&s->busy, 0, 1) == 0)
			return s;
	}
	return NULL;
}

/*
 * event_begin takes a scratch slot and fills the subject of its record.
 * Without a free slot it counts the denial in stats[STAT_UNATTRIBUTED] and
 * returns NULL: the caller still denies.
 */
static __always_inline struct event_scratch *event_begin(const struct effective *e,
							 __u16 hook, int decision,
							 __u32 bit, int err)
{
	struct event_scratch *sc = scratch_get();
	if (!sc) {
		stat_add(STAT_UNATTRIBUTED);
		return NULL;
	}
	struct event *ev = &sc->ev;
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
	ev->object_id = 0;
	ev->mode = 0;
	ev->family = 0;
	ev->port = 0;
	ev->sock_type = 0;
	ev->protocol = 0;
	__builtin_memset(ev->addr, 0, sizeof(ev->addr));
	/* Whole names: their bytes are hashed into the tally key. A loop,
	 * not unrolled: unrolled, clang keeps the addresses on the stack. */
	__u64 *w = (__u64 *)ev->names;
#pragma clang loop unroll(disable)
	for (int i = 0; i < EVENT_NAME_WORDS; i++)
		w[i] = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	return sc;
}

/* emit puts the record into the ring buffer; a full one is counted. */
static __always_inline void emit(struct event *ev)
{
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev), 0))
		stat_add(STAT_LOST);
}

/* tally_key_fill derives the key of the record's distinct denial. */
static __always_inline void tally_key_fill(struct tally_key *k, const struct event *ev)
{
	const __u64 *w = (const __u64 *)ev->names;
	__u64 h = 0xcbf29ce484222325ULL;
#pragma clang loop unroll(disable)
	for (int i = 0; i < EVENT_NAME_WORDS; i++)
		h = (h ^ w[i]) * 0x100000001b3ULL;
	k->ceiling_cgroup_id = ev->ceiling_cgroup_id;
	k->object_id = ev->object_id;
	k->names_hash = h;
	k->dev = ev->dev;
	k->hook = ev->hook;
	k->decision = ev->decision;
	k->deny_bit = ev->deny_bit;
	k->object_kind = ev->object_kind;
	k->sock_type = ev->sock_type;
	k->protocol = ev->protocol;
	k->family = ev->family;
	k->port = ev->port;
	k->pad = 0;
	__builtin_memcpy(k->addr, ev->addr, sizeof(k->addr));
}

/*
 * event_commit counts the finished record's denial and, when it is the
 * first of its kind since the tally map was installed (or the tally map is
 * full), puts the record into the ring buffer; then frees the slot. Without
 * an installed tally map (none installed yet) every record goes out.
 */
static __always_inline void event_commit(struct event_scratch *sc)
{
	struct event *ev = &sc->ev;
	__u32 slot = 0;
	void *tally = bpf_map_lookup_elem(&tally_slot, &slot);
	if (!tally) {
		emit(ev);
		goto out;
	}
	tally_key_fill(&sc->key, ev);
	__u64 *n = bpf_map_lookup_elem(tally, &sc->key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		goto out;
	}
	sc->zero = 1;
	long ret = bpf_map_update_elem(tally, &sc->key, &sc->zero, BPF_NOEXIST);
	if (ret == 0) {
		emit(ev);
		goto out;
	}
	n = bpf_map_lookup_elem(tally, &sc->key); /* another CPU's first */
	if (n) {
		__sync_fetch_and_add(n, 1);
		goto out;
	}
	sc->okey.ceiling_cgroup_id = ev->ceiling_cgroup_id;
	sc->okey.hook = ev->hook;
	sc->okey.decision = ev->decision;
	sc->okey.deny_bit = ev->deny_bit;
	tally_overflow(&sc->okey, &sc->zero);
	emit(ev);
out:
	asm volatile("" ::: "memory");
	sc->busy = 0;
}

/*
 * record_event writes the record of a decision: it takes a scratch record
 * filled by event_begin(e, hook, decision, bit, EPERM), runs the fill
 * statements (the arguments after bit, which see the record as ev), and
 * commits it (event_commit: counted, and into the ring buffer when it is the
 * first of its kind). The caller's verdict stands either way:
 *
 *	record_event(&e, HOOK_INODE_CREATE, v, DENY_WRITE, fill_dentry(ev, d));
 *	return verdict_ret(v);
 */
#define record_event(e, hook, decision, bit, ...)                                \
	do {                                                                   \
		struct event_scratch *sc_ =                                    \
			event_begin(e, hook, decision, bit, EPERM);            \
		if (sc_) {                                                     \
			struct event *ev = &sc_->ev;                           \
			__VA_ARGS__;                                           \
			event_commit(sc_);                                     \
		}                                                              \
	} while (0)

/* fill_inode records a file's identity (nothing but the kind for NULL). */
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

#endif /* ENFORCERD_EVENT_H */
