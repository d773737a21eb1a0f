//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Escape and tamper (threat model E1-E4, X3), for every enforced process
 * whatever its ceiling: every registration implies DENY_TAMPER (resolve()).
 *
 *  - no bpf() at all (E3: list/update/delete our maps, detach links);
 *  - no ptrace, /proc/<pid>/mem or process_vm_writev on, and no signal to,
 *    a process outside the sandbox (E4: the daemon, the host);
 *  - no leaving the cgroup subtree (E2): cgroup.procs/cgroup.threads writes
 *    outside it and clone3(CLONE_INTO_CGROUP) outside it both need
 *    MAY_WRITE on a cgroup.procs file outside the subtree (the kernel's
 *    cgroup_procs_write_permission), checked at inode_permission;
 *  - no mount, umount, remount, move_mount or pivot_root;
 *  - no unlink/rename of anything on a bpf filesystem (E4: our pins);
 *  - no TIOCSTI/TIOCLINUX terminal injection (X3), native (file.bpf.c's
 *    file_ioctl) or compat ioctl;
 *  - no write to a cgroup file or directory outside the subtree (cgroup.kill,
 *    freeze, limits, mkdir), to cgroup v1, or to kernel tunables that run
 *    code outside the sandbox (/proc/sys: core_pattern, modprobe; sysrq;
 *    sysfs: uevent_helper; securityfs, debugfs, tracefs, configfs, efivarfs);
 *  - no F_SETOWN of a descriptor to another process (SIGIO/SIGURG signals);
 *  - no capability that administers the kernel itself (CAP_SYS_ADMIN: mount,
 *    mount_setattr, fsopen/fsmount; CAP_SYS_MODULE, CAP_SYS_RAWIO,
 *    CAP_SYS_BOOT, CAP_MAC_*, CAP_BPF, CAP_PERFMON, and CAP_DAC_READ_SEARCH
 *    for open_by_handle_at), in every user namespace.
 *
 * "Outside" is decided on the target's cgroup object: the sandbox is the
 * subtree of the deepest registered ancestor of the current task.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "exec.h"
#include "locks.h"
#include "sigio.h"
#include "pgrp.h"

char LICENSE[] SEC("license") = "GPL";

/* E3 */
SEC("lsm/bpf")
int BPF_PROG(bpf, int cmd, union bpf_attr *attr, unsigned int size, int ret)
{
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_BPF, RULE_BPF_SYSCALL, OBJ_BPF_CMD, cmd);
}

/* Linux 6.9+ added a bool kernel argument; the loader picks the variant
 * matching the kernel's BTF. */
SEC("lsm/bpf")
int BPF_PROG(bpf_v4, int cmd, union bpf_attr *attr, unsigned int size,
	     bool kernel, int ret)
{
	if (ret)
		return ret;
	if (kernel)
		return 0; /* in-kernel users (e.g. a light skeleton), not a process */
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_BPF, RULE_BPF_SYSCALL, OBJ_BPF_CMD, cmd);
}

/* E4: ptrace attach/peek/poke, /proc/<pid>/mem, process_vm_writev. */
SEC("lsm/ptrace_access_check")
int BPF_PROG(ptrace_access_check, struct task_struct *child, unsigned int mode,
	     int ret)
{
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (task_outside(&e, child))
		return tamper(&e, HOOK_PTRACE_ACCESS_CHECK, RULE_PTRACE_OUTSIDE, OBJ_TASK, BPF_CORE_READ(child, tgid));
	/* shell=read_only: a write-denied process (started by exec) may not
	 * ptrace or write the memory of one that may write (the entrypoint),
	 * which would turn it into a writer. */
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 *cf = bpf_task_storage_get(&task_flags, cur, 0, 0);
	if (!cf || !(*cf & (TASK_EXEC_WRITE_DENIED | TASK_EXEC_WRITE_AUDITED)))
		return 0;
	__u32 cflags = *cf;
	__u32 *tf = bpf_task_storage_get(&task_flags, child, 0, 0);
	if (tf && (*tf & TASK_EXEC_WRITE_DENIED))
		return 0;
	int v = (cflags & TASK_EXEC_WRITE_DENIED) ? DECISION_DENIED : DECISION_AUDITED;
	record_event(&e, HOOK_PTRACE_ACCESS_CHECK, v, DENY_SHELL_WRITE, {
		set_rule(ev, RULE_SHELL_PTRACE);
		ev->object_kind = OBJ_TASK;
		ev->target_pid = BPF_CORE_READ(child, tgid);
	});
	return verdict_ret(v);
}

/* E4: PTRACE_TRACEME hands control to a parent outside the sandbox. */
SEC("lsm/ptrace_traceme")
int BPF_PROG(ptrace_traceme, struct task_struct *parent, int ret)
{
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, parent))
		return 0;
	return tamper(&e, HOOK_PTRACE_TRACEME, RULE_PTRACE_OUTSIDE, OBJ_TASK, BPF_CORE_READ(parent, tgid));
}

/* E4: kill, tgkill, sigqueue, pidfd_send_signal to a process outside. */
/* task_kill_outside: task_kill's decision on a signal to p, a process
 * other than the sender's own thread group. A static subprogram: the
 * program below then needs no stack and no callee-saved register. */
static __noinline int task_kill_outside(struct task_struct *p)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, p))
		return 0;
	return tamper(&e, HOOK_TASK_KILL, RULE_SIGNAL_OUTSIDE, OBJ_TASK, BPF_CORE_READ(p, tgid));
}

SEC("lsm/task_kill")
int BPF_PROG(task_kill, struct task_struct *p, struct kernel_siginfo *info,
	     int sig, const struct cred *cred, int ret)
{
	if (ret)
		return ret;
	/* A signal to the sender's own thread group never leaves the
	 * sandbox (its threads share the sender's memory): no lookup. */
	if (p->tgid == (__u32)(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return task_kill_outside(p);
}

/*
 * E2/E4/K1/K3 at inode_permission(MAY_WRITE), which every open for write,
 * mkdir, and every cgroup migration passes:
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
 *  - kernel tunables and pseudo filesystems that act outside the sandbox.
 * Cheap checks first: this hook runs on every path walk step.
 */
/* inode_permission_write: inode_permission's decision on a write. A
 * static subprogram (bpf-to-bpf call): the program below then needs no
 * stack and no callee-saved register, so its prologue and epilogue are as
 * short as a program's can be (every path syscall of the host runs it once
 * per path component, and almost all of them return before this). */
static __noinline int inode_permission_write(struct inode *inode)
{
	struct super_block *sb = inode->i_sb;
	if (!sb)
		return 0;
	__u64 magic = sb->s_magic;
	if (!kernel_fs_magic(magic))
		return 0;
	/* Unenforced processes stop here, before any procfs reads. */
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return deny_kernel_write(&e, inode, magic, HOOK_INODE_PERMISSION);
}

SEC("lsm/inode_permission")
int BPF_PROG(inode_permission, struct inode *inode, int mask, int ret)
{
	if (ret)
		return ret;
	if (!(mask & MAY_WRITE))
		return 0;
	return inode_permission_write(inode);
}

static __always_inline int deny_mount(__u16 hook)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, hook, RULE_MOUNT, OBJ_MOUNT, 0);
}

SEC("lsm/sb_mount")
int BPF_PROG(sb_mount, const char *dev_name, const struct path *path,
	     const char *type, unsigned long flags, void *data, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_MOUNT);
}

SEC("lsm/sb_umount")
int BPF_PROG(sb_umount, struct vfsmount *mnt, int flags, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_UMOUNT);
}

SEC("lsm/sb_remount")
int BPF_PROG(sb_remount, struct super_block *sb, void *mnt_opts, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_REMOUNT);
}

SEC("lsm/move_mount")
int BPF_PROG(move_mount, const struct path *from_path,
	     const struct path *to_path, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_MOVE_MOUNT);
}

SEC("lsm/sb_pivotroot")
int BPF_PROG(sb_pivotroot, const struct path *old_path,
	     const struct path *new_path, int ret)
{
	if (ret)
		return ret;
	return deny_mount(HOOK_SB_PIVOTROOT);
}

/* file_fcntl_decision: file_fcntl's rules, for the commands it decides
 * on. A static subprogram: the program below then needs no stack and no
 * callee-saved register.
 *
 * E4, native and compat (fcntl64 reaches the same hook with the same
 * commands): the commands that arrange a descriptor's I/O signals (SIGIO,
 * SIGURG, an F_SETSIG signal, dnotify's, a lease break's) mark the file
 * for the delivery's decision (sigio.h); an owner named outside is
 * refused here already where that can be told (sigio_named_owner_outside,
 * owner_outside), for a clear EPERM. */
static __noinline int file_fcntl_decision(struct file *file, unsigned int cmd, unsigned long arg)
{
	int ret;
	if ((ret = lease_fcntl(file, cmd, arg))) /* locks.h: W10 leases */
		return ret;
	if (cmd == F_SETFL && !(arg & FASYNC))
		return 0;
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (cmd == F_SETFL || cmd == F_SETSIG) {
		/* O_ASYNC on a descriptor whose owner is already outside (set
		 * before the ceiling, or by the peer), or choosing the signal
		 * (F_SETSIG, e.g. SIGKILL) such an owner receives when the
		 * peer does I/O. */
		if (owner_outside(&e, file))
			return tamper(&e, HOOK_FILE_FCNTL, RULE_SIGIO_OWNER, OBJ_NONE, 0);
	} else if (cmd == F_SETOWN || cmd == F_SETOWN_EX) {
		long owner = (int)arg;
		if (cmd == F_SETOWN_EX) {
			struct {
				int type;
				int pid;
			} ex = {};
			if (bpf_probe_read_user(&ex, sizeof(ex), (void *)arg) < 0)
				owner = 0; /* unreadable: the delivery decides */
			else if (ex.type == F_OWNER_TID || ex.type == F_OWNER_PID)
				owner = ex.pid;
			else
				owner = 0; /* a process group: decided member by member */
		}
		if (sigio_named_owner_outside(owner))
			return tamper(&e, HOOK_FILE_FCNTL, RULE_SIGIO_OWNER, OBJ_TASK, owner);
	}
	return sigio_mark(&e, file, HOOK_FILE_FCNTL);
}

SEC("lsm/file_fcntl")
int BPF_PROG(file_fcntl, struct file *file, unsigned int cmd,
	     unsigned long arg, int ret)
{
	if (ret)
		return ret;
	/* Every other command (F_GETFL, F_DUPFD, F_SETFD, record locks:
	 * file_lock) returns 0 in file_fcntl_decision. */
	if (cmd != F_SETLEASE && cmd != F_SETFL && cmd != F_SETSIG && cmd != F_SETOWN &&
	    cmd != F_SETOWN_EX && cmd != F_NOTIFY)
		return 0;
	return file_fcntl_decision(file, cmd, arg);
}

/*
 * K4: capabilities are an allow list: the set a default container runtime
 * grants (runc/containerd/Docker defaults) minus CAP_MKNOD (device nodes
 * reach raw disks below every inode check) and CAP_AUDIT_WRITE (AUDIT_USER
 * messages of the sandbox's choosing land in the host's audit trail, or in
 * the kernel log without auditd). Every other capability acts on
 * the host or on shared kernel state and is refused: CAP_SYS_ADMIN (mounts,
 * fsopen), CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_SYS_TIME,
 * CAP_SYS_PACCT (acct(2) records every exit on the host), CAP_AUDIT_CONTROL
 * (the host's audit configuration), CAP_SYS_NICE (real-time priorities that
 * starve host CPUs), CAP_SYS_RESOURCE, CAP_IPC_LOCK, CAP_IPC_OWNER,
 * CAP_NET_ADMIN, CAP_SYSLOG, CAP_DAC_READ_SEARCH (open_by_handle_at),
 * CAP_BPF, CAP_PERFMON, CAP_MAC_*, CAP_CHECKPOINT_RESTORE, and whatever a
 * kernel adds next.
 *
 * The list is the same in every user namespace, including ones the sandbox
 * creates: a capability there nominally acts only on that namespace's
 * objects, but kernel code reached through namespaced CAP_SYS_ADMIN and
 * CAP_NET_ADMIN has been a steady source of privilege escalations, and the
 * mount hooks refuse what user-namespace sandboxes (bubblewrap) use them
 * for anyway.
 */
static __always_inline bool allowed_cap(int cap)
{
	switch (cap) {
	case CAP_CHOWN:
	case CAP_DAC_OVERRIDE:
	case CAP_FOWNER:
	case CAP_FSETID:
	case CAP_KILL:
	case CAP_SETGID:
	case CAP_SETUID:
	case CAP_SETPCAP:
	case CAP_NET_BIND_SERVICE:
	case CAP_NET_RAW:
	case CAP_SYS_CHROOT:
	case CAP_SETFCAP:
		return true;
	}
	return false;
}

SEC("lsm/capable")
int BPF_PROG(capable, const struct cred *cred, struct user_namespace *ns,
	     int cap, unsigned int opts, int ret)
{
	if (ret)
		return ret;
	if (allowed_cap(cap))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	/* Checks the kernel makes quietly (CAP_OPT_NOAUDIT, e.g. the
	 * overcommit reserve) are refused without a record. */
	if (!(opts & CAP_OPT_NOAUDIT)) {
		record_event(&e, HOOK_CAPABLE, v, DENY_TAMPER, {
			set_rule(ev, RULE_CAPABILITY);
			ev->object_kind = OBJ_CAPABILITY;
			ev->capability = cap;
		});
	}
	return verdict_ret(v);
}

#define CRYPTO_NAME_LEN 48
#define CRYPTO_TAINT_NS (60ULL * 1000000000ULL)

/* A name (template or algorithm) an enforced process asked the crypto API
 * for, and failed to get a module for. */
struct crypto_taint_key {
	char name[CRYPTO_NAME_LEN];
};

struct crypto_taint {
	__u64 time_ns; /* bpf_ktime_get_boot_ns of the refused request */
	__u64 cgroup_id; /* the ceiling cgroup that refused it */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct crypto_taint_key);
	__type(value, struct crypto_taint);
} crypto_taint SEC(".maps");

static __always_inline bool crypto_prefix(const char *b)
{
	return b[0] == 'c' && b[1] == 'r' && b[2] == 'y' && b[3] == 'p' &&
	       b[4] == 't' && b[5] == 'o' && b[6] == '-';
}

/* One pass over "crypto-NAME..." (bpf_loop callback: verified once, not
 * once per character). record=1: store every name in the map; record=0:
 * stop after the first name, left in k (length j). */
#define CRYPTO_MAX_ALG_NAME 128

struct crypto_scan {
	char buf[CRYPTO_MAX_ALG_NAME];
	struct crypto_taint_key k;
	struct crypto_taint v;
	__u32 j;
	__u32 record;
	__u32 start; /* 7: after "crypto-"; 0: an algorithm name */
	__u32 pad;
};

static long crypto_scan_char(__u32 i, void *ctx)
{
	struct crypto_scan *s = ctx;
	__u32 idx = i + s->start;
	if (idx >= CRYPTO_MAX_ALG_NAME)
		return 1;
	char c = s->buf[idx];
	if (c == '(' || c == ')' || c == ',' || c == 0) {
		if (!s->record)
			return 1;
		if (s->j > 0) {
			bpf_map_update_elem(&crypto_taint, &s->k, &s->v, BPF_ANY);
			__builtin_memset(&s->k, 0, sizeof(s->k));
			s->j = 0;
		}
		return c == 0;
	}
	__u32 j = s->j;
	if (j < CRYPTO_NAME_LEN - 1) {
		s->k.name[j] = c;
		s->j = j + 1;
	}
	return 0;
}

/* taint_crypto records every name in "crypto-T1(T2(alg),...)" that an
 * enforced process was refused. Its own frame (noinline): the scan buffer
 * stays off the hook's stack, which also holds resolve()'s frame. */
static __noinline void taint_crypto(const char *kmod_name, __u64 cgid)
{
	struct crypto_scan s = {};
	bpf_probe_read_kernel_str(s.buf, sizeof(s.buf), kmod_name);
	if (!crypto_prefix(s.buf))
		return;
	s.record = 1;
	s.start = 7;
	LOOP_STATE_UNKNOWN(s, j, j); /* loop.h: a known 0 made every "j > 0" dead on 6.1 */
	s.v.time_ns = bpf_ktime_get_boot_ns();
	s.v.cgroup_id = cgid;
	bpf_loop(CRYPTO_MAX_ALG_NAME, crypto_scan_char, &s, 0);
}

/* taint_alg_name records every name in an algorithm name "T1(T2(alg))" an
 * enforced process looked up (crypto_lookup below). */
static __noinline void taint_alg_name(const char *name, __u64 cgid)
{
	struct crypto_scan s = {};
	bpf_probe_read_kernel_str(s.buf, sizeof(s.buf), name);
	s.record = 1;
	LOOP_STATE_UNKNOWN(s, j, j); /* loop.h: a known 0 made every "j > 0" dead on 6.1 */
	s.v.time_ns = bpf_ktime_get_boot_ns();
	s.v.cgroup_id = cgid;
	bpf_loop(CRYPTO_MAX_ALG_NAME, crypto_scan_char, &s, 0);
}

/* crypto_tainted: a kernel thread's "crypto-NAME[(...)][-all]" request
 * whose first name was refused to an enforced process less than
 * CRYPTO_TAINT_NS ago; returns that ceiling cgroup's id, else 0. */
static __noinline __u64 crypto_tainted(const char *kmod_name)
{
	struct crypto_scan s = {};
	bpf_probe_read_kernel_str(s.buf, sizeof(s.buf), kmod_name);
	if (!crypto_prefix(s.buf))
		return 0;
	s.start = 7;
	LOOP_STATE_UNKNOWN(s, j, j); /* loop.h: a known 0 made every "j > 0" dead on 6.1 */
	bpf_loop(CRYPTO_MAX_ALG_NAME, crypto_scan_char, &s, 0);
	/* "-all": the second request crypto_larval_lookup makes. The index
	 * is masked so every verifier can bound it (j is unknown to it). */
	__u32 j = s.j;
	if (j >= 4 && j < CRYPTO_NAME_LEN) {
		__u32 d = (j - 4) & 31;
		if (d + 4 == j && s.k.name[d] == '-' && s.k.name[d + 1] == 'a' &&
		    s.k.name[d + 2] == 'l' && s.k.name[d + 3] == 'l')
			__builtin_memset(&s.k.name[d], 0, 4);
	}
	struct crypto_taint *t = bpf_map_lookup_elem(&crypto_taint, &s.k);
	if (!t || bpf_ktime_get_boot_ns() - t->time_ns > CRYPTO_TAINT_NS)
		return 0;
	return t->cgroup_id;
}

/*
 * K9: usermode helpers. A module autoload (request_module: netdev-*,
 * net-pf-*, key-type-*, fs-*, crypto-*, ...) runs modprobe as root outside
 * every sandbox, with whatever the host's modprobe path names. Enforced
 * processes never trigger one.
 *
 * The crypto API also asks on a process's behalf from a kernel thread: an
 * unknown "tmpl(alg)" (AF_ALG bind, keyctl KEYCTL_DH_COMPUTE's KDF hash, ...)
 * makes the crypto manager start a cryptomgr_probe thread, in the root
 * cgroup, that requests "crypto-tmpl". So every name in a crypto request
 * refused to an enforced process is remembered for a minute, and a kernel
 * thread's request for it is refused too (a host request for the same
 * unloaded module in that minute fails as well: fail closed).
 */
SEC("lsm/kernel_module_request")
int BPF_PROG(kernel_module_request, char *kmod_name, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	if (!resolve(&e)) {
		struct task_struct *t = bpf_get_current_task_btf();
		if (!(t->flags & PF_KTHREAD))
			return 0;
		__u64 cgid = crypto_tainted(kmod_name);
		if (!cgid)
			return 0;
		record_event(&e, HOOK_KERNEL_MODULE_REQUEST, DECISION_DENIED, DENY_TAMPER, {
			set_rule(ev, RULE_KERNEL_MODULE);
			ev->ceiling_cgroup_id = cgid;
			ev->object_kind = OBJ_FILE;
			bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN, kmod_name);
		});
		return verdict_ret(DECISION_DENIED);
	}
	int v = verdict(&e, DENY_TAMPER);
	if (!v)
		return 0;
	if (v == DECISION_DENIED)
		taint_crypto(kmod_name, e.deny_cgid[4]);
	record_event(&e, HOOK_KERNEL_MODULE_REQUEST, v, DENY_TAMPER, {
		set_rule(ev, RULE_KERNEL_MODULE);
		ev->object_kind = OBJ_FILE;
		bpf_probe_read_kernel_str(ev->names[0], EVENT_NAME_LEN, kmod_name);
	});
	return verdict_ret(v);
}

/*
 * K9: every crypto algorithm lookup of an enforced process taints the
 * names in it, whatever its length. A name of 56 bytes or more never
 * reaches kernel_module_request in the process's context (request_module
 * refuses it with ENAMETOOLONG first), yet the crypto manager's threads
 * then probe its parts one nesting level at a time. fentry cannot refuse
 * anything; kernel_module_request above refuses what is tainted. Optional:
 * attached where the kernel lets tracing programs attach to this function.
 */
SEC("fentry/crypto_alg_mod_lookup")
int BPF_PROG(crypto_alg_mod_lookup, const char *name, __u32 type, __u32 mask)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (verdict(&e, DENY_TAMPER) != DECISION_DENIED)
		return 0;
	taint_alg_name(name, e.deny_cgid[4]);
	return 0;
}

/* E4: a signal the kernel sends on I/O (SIGIO/SIGURG, an F_SETSIG
 * signal, dnotify's, a lease break's) to a process outside: from an
 * enforced process's I/O, however its owner was set (before the ceiling
 * too), and from anyone's I/O on a file an enforced process arranged the
 * signals of (sigio.h). */
static __always_inline int sigio_from_enforced(struct task_struct *tsk)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, tsk))
		return 0;
	return tamper(&e, HOOK_FILE_SEND_SIGIOTASK, RULE_SIGIO_OWNER, OBJ_TASK,
		      BPF_CORE_READ(tsk, tgid));
}

SEC("lsm/file_send_sigiotask")
int BPF_PROG(file_send_sigiotask, struct task_struct *tsk,
	     struct fown_struct *fown, int sig, int ret)
{
	if (ret)
		return ret;
	int r = sigio_from_enforced(tsk);
	if (r)
		return r;
	return sigio_deliver(tsk, fown);
}

/* E4: setpgid into a process group with a member outside the sandbox (a
 * session shared with processes outside: enforcerd run from an
 * interactive shell). In it, the tty core's job-control signals and the
 * SIGHUP+SIGCONT of an exit that orphans the group with a stopped member
 * reach those members without task_kill (pgrp.h). A group of its own
 * (pgid is the process's own number) and groups wholly inside stay
 * allowed; pgid is a number in the caller's pid namespace, matched there. */
SEC("lsm/task_setpgid")
int BPF_PROG(task_setpgid, struct task_struct *p, pid_t pgid, int ret)
{
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int ns_level = current_pid_ns_level();
	if (pgid == pid_nr_at(BPF_CORE_READ(p, thread_pid), ns_level))
		return 0;
	if (!members_outside(BPF_CORE_READ(p, signal, pids[PIDTYPE_SID]), PIDTYPE_SID,
			     e.sandbox_level, e.sandbox_cgid, ns_level, pgid))
		return 0;
	return tamper(&e, HOOK_TASK_SETPGID, RULE_SIGNAL_OUTSIDE, OBJ_TASK, pgid);
}

/* E4: nice, I/O priority, scheduling policy and CPU affinity of a process
 * outside (setpriority, ioprio_set, sched_setscheduler/setattr/setaffinity). */
static __always_inline int deny_task_outside(struct task_struct *p, __u16 hook)
{
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (!task_outside(&e, p))
		return 0;
	return tamper(&e, hook, RULE_PROCESS_OUTSIDE, OBJ_TASK, BPF_CORE_READ(p, tgid));
}

SEC("lsm/task_setnice")
int BPF_PROG(task_setnice, struct task_struct *p, int nice, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p, HOOK_TASK_SETNICE);
}

SEC("lsm/task_setioprio")
int BPF_PROG(task_setioprio, struct task_struct *p, int ioprio, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p, HOOK_TASK_SETIOPRIO);
}

SEC("lsm/task_setscheduler")
int BPF_PROG(task_setscheduler, struct task_struct *p, int ret)
{
	if (ret)
		return ret;
	return deny_task_outside(p, HOOK_TASK_SETSCHEDULER);
}

/* E4: prlimit(2) on another process. The hook names credentials, not the
 * process, so an enforced process may change only its own limits
 * (prlimit(0, ...)/setrlimit never reach this hook). */
SEC("lsm/task_prlimit")
int BPF_PROG(task_prlimit, const struct cred *cred, const struct cred *tcred,
	     unsigned int flags, int ret)
{
	if (ret)
		return ret;
	if (!(flags & LSM_PRLIMIT_WRITE))
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_TASK_PRLIMIT, RULE_PROCESS_OUTSIDE, OBJ_NONE, 0);
}

/*
 * K6: core-dump pipe helpers. With core_pattern piping to a helper
 * (systemd-coredump, apport), a crash makes the kernel run the helper as
 * root outside the sandbox, fed with sandbox-chosen memory. do_coredump
 * aborts pipe dumps when the soft RLIMIT_CORE is exactly 1
 * (fs/coredump.c), so enforcerd sets 1 before the entrypoint and an
 * enforced process may not set RLIMIT_CORE to anything else (setrlimit,
 * prlimit on itself or on a process of its own; prlimit on outsiders is
 * refused by task_prlimit).
 */
SEC("lsm/task_setrlimit")
int BPF_PROG(task_setrlimit, struct task_struct *p, unsigned int resource,
	     struct rlimit *new_rlim, int ret)
{
	if (ret)
		return ret;
	if (resource != RLIMIT_CORE)
		return 0;
	if (BPF_CORE_READ(new_rlim, rlim_cur) == 1)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_TASK_SETRLIMIT, RULE_CORE_DUMP_LIMIT, OBJ_NONE, resource);
}

/*
 * K5: io_uring command passthrough (IORING_OP_URING_CMD) hands a driver a
 * raw command: NVMe I/O and admin commands on /dev/ng*, socket options,
 * ublk. None is on the allow list (there is none): refused under every
 * ceiling, as the raw passthrough ioctls are.
 */
SEC("lsm/uring_cmd")
int BPF_PROG(uring_cmd, struct io_uring_cmd *ioucmd, int ret)
{
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_URING_CMD, RULE_URING_CMD, OBJ_NONE, 0);
}
