/* SPDX-License-Identifier: GPL-2.0 */
/*
 * E4, I/O signals (SIGIO, SIGURG, a signal chosen with F_SETSIG; dnotify's
 * and lease breaks' signals too) decided where the kernel delivers them.
 *
 * Where a descriptor's signals go is decided by more than the owner its
 * caller names: the tty core sets the owner itself when O_ASYNC is
 * enabled on a terminal (to the terminal's foreground process group),
 * F_NOTIFY and F_SETLEASE keep an owner set earlier, and F_SETOWN_EX,
 * FIOSETOWN, SIOCSPGRP and FIOASYNC read their argument from user memory
 * a second time after the hook read it. A check of the owner when it is
 * set cannot see any of that, and the signal itself is sent from whoever
 * does the I/O (a worker feeding the terminal, a host writer), not from
 * the sandbox. So the decision is made at delivery, on the file:
 *
 *  - Mark: an enforced process that arranges a descriptor's I/O signals
 *    (fcntl F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETFL with O_ASYNC,
 *    F_NOTIFY, F_SETLEASE; ioctl FIOSETOWN, SIOCSPGRP, FIOASYNC, whatever
 *    their argument) marks the open file with its sandbox in sigio_marks,
 *    keyed by what the delivery hook reaches on every kernel: the struct
 *    file's address, with its opener's credentials and its inode, so that
 *    a new file at a freed one's address is another key. A mark that
 *    cannot be stored refuses the command (RULE_OWNER_UNRECORDED): the
 *    arrangement never happens.
 *  - Decide: file_send_sigiotask refuses a signal from a marked file to a
 *    task outside a sandbox that marked it, whoever sends it and however
 *    the owner was chosen (a process group's members are decided one by
 *    one, as the kernel delivers to each). A file two sandboxes marked
 *    signals only tasks inside both; one a third sandbox marked too
 *    signals nobody. A mark is never lifted while its file lives: a
 *    descriptor a sandbox arranged and then passed out signals only that
 *    sandbox, whoever sets its owner afterwards.
 *
 * Marks of files that are gone are removed when the map is full. A new
 * file at a freed one's address, opened with the same credentials on the
 * same inode, inherits its mark: its signals to outside are refused, the
 * fail-closed side.
 *
 * Fail direction: a mark whose sandbox is no longer registered still
 * refuses (the arrangement was a sandbox's); a mark for a registration in
 * audit-only posture records and allows.
 */
#ifndef ENFORCERD_SIGIO_H
#define ENFORCERD_SIGIO_H

#include "enforcerd.h"

/* SIGIO_MARKS: the files whose signals enforced processes arranged, at
 * most; memory follows the live marks (not preallocated). */
#define SIGIO_MARKS 65536

/* A file, as the delivery hook can name it: its address, and its opener's
 * credentials and inode, so that a new file at a freed one's address (with
 * another opener or inode) is another key. */
struct sigio_key {
	__u64 file;
	__u64 cred;
	__u64 inode;
};

/* The sandboxes that arranged a file's signals. Slots are taken in place
 * with compare-and-swap, never rewritten whole, so two sandboxes marking
 * one file at once both stay. */
struct sigio_mark {
	__u64 cgid[2];	/* the marking sandboxes' cgroup ids (0: free) */
	__s32 level[2]; /* their levels, written after the id */
	__u32 nobody;	/* a third sandbox: every target is outside one */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SIGIO_MARKS);
	__type(key, struct sigio_key);
	__type(value, struct sigio_mark);
} sigio_marks SEC(".maps");

/* Linux 6.13 replaced file.f_count (atomic_long_t) with f_ref. */
struct file___count {
	atomic_long_t f_count;
} __attribute__((preserve_access_index));

/* sigio_key_of fills k for the file at address file. Reads through
 * bpf_probe_read_kernel, which never faults: purge reads freed files. */
static __always_inline void sigio_key_of(struct sigio_key *k, __u64 file)
{
	struct file *f = (struct file *)file;
	k->file = file;
	k->cred = 0;
	k->inode = 0;
	bpf_probe_read_kernel(&k->cred, sizeof(k->cred), &f->f_cred);
	bpf_probe_read_kernel(&k->inode, sizeof(k->inode), &f->f_inode);
}

/* sigio_stale: the file k was made for is gone: its address now holds
 * another opener's or inode's file, or a freed one (count 0). */
static __always_inline bool sigio_stale(const struct sigio_key *k)
{
	struct sigio_key now;
	sigio_key_of(&now, k->file);
	if (now.cred != k->cred || now.inode != k->inode)
		return true;
	if (bpf_core_field_exists(struct file___count, f_count)) {
		long count = 1;
		bpf_probe_read_kernel(&count, sizeof(count),
				      (void *)k->file + bpf_core_field_offset(struct file___count, f_count));
		return count == 0;
	}
	return false;
}

static long sigio_purge_one(struct bpf_map *map, struct sigio_key *k, struct sigio_mark *m,
			    void *ctx)
{
	if (sigio_stale(k))
		bpf_map_delete_elem(map, k);
	return 0;
}

/*
 * sigio_mark marks file as having its I/O signals arranged by the current,
 * enforced task (e: resolve() returned 1). Returns 0, or the verdict that
 * refuses the command when no mark can be stored (the map is full even
 * after sigio_purge removed the marks of files that are gone; the purge
 * runs in the marking process, which pays for it).
 */
static __noinline int sigio_mark(struct effective *e, struct file *file, __u16 hook)
{
	if (!file)
		return 0;
	struct sigio_key k;
	sigio_key_of(&k, (__u64)file);
	struct sigio_mark zero = {};
	struct sigio_mark *m = bpf_map_lookup_elem(&sigio_marks, &k);
	if (!m) {
		/* BPF_NOEXIST: a mark another CPU made meanwhile stays.
		 * map_op_err: on 6.1 a full map's -E2BIG is not a negative
		 * long (maps.h); compared whole, the purge never ran there,
		 * and marks of files long gone refused every new one. */
		if (map_op_err(bpf_map_update_elem(&sigio_marks, &k, &zero, BPF_NOEXIST)) == -E2BIG) {
			bpf_for_each_map_elem(&sigio_marks, sigio_purge_one, NULL, 0);
			bpf_map_update_elem(&sigio_marks, &k, &zero, BPF_NOEXIST);
		}
		m = bpf_map_lookup_elem(&sigio_marks, &k);
		if (!m)
			return tamper(e, hook, RULE_OWNER_UNRECORDED, OBJ_NONE, 0);
	}
	__u64 cgid = e->sandbox_cgid;
	if (ENFORCERD_READ_ONCE(m->cgid[0]) == cgid || ENFORCERD_READ_ONCE(m->cgid[1]) == cgid)
		return 0;
	if (__sync_val_compare_and_swap(&m->cgid[0], 0, cgid) == 0) {
		m->level[0] = e->sandbox_level;
		return 0;
	}
	if (__sync_val_compare_and_swap(&m->cgid[1], 0, cgid) == 0) {
		m->level[1] = e->sandbox_level;
		return 0;
	}
	if (ENFORCERD_READ_ONCE(m->cgid[0]) != cgid && ENFORCERD_READ_ONCE(m->cgid[1]) != cgid)
		m->nobody = 1;
	return 0;
}

/* sigio_named_owner_outside: an owner named by pid (F_SETOWN's value,
 * F_SETOWN_EX's or FIOSETOWN's as read here) that is another process
 * than the caller. Only an early answer, for a clear EPERM at the call:
 * the kernel reads user memory again, and in another pid namespace the
 * numbers mean other processes, so the delivery decides (sigio_deliver);
 * outside the initial pid namespace this says nothing, and neither does a
 * process group (a negative owner: its members are decided one by one at
 * delivery, so a group wholly inside the sandbox is allowed). */
static __always_inline bool sigio_named_owner_outside(long owner)
{
	if (owner <= 0 || current_pid_ns_level() != 0)
		return false;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	return owner != (long)(pid_tgid >> 32) && owner != (long)(__u32)pid_tgid;
}

/*
 * sigio_ioctl: the ioctls that arrange a descriptor's I/O signals
 * (FIOSETOWN and SIOCSPGRP name an owner, FIOASYNC enables them), native
 * and compat (the same numbers): an owner named outside or O_ASYNC on a
 * descriptor whose owner is outside is refused at once where that can be
 * told; otherwise the file is marked for the delivery's decision. The
 * arguments are read from user memory, which the kernel reads again: the
 * mark is made whatever they say.
 */
static __always_inline int sigio_ioctl(struct file *file, unsigned int cmd, unsigned long arg,
				       __u16 hook)
{
	struct effective e = {};
	if (!resolve(&e))
		return 0;
	if (cmd == FIOASYNC) {
		int on = 1;
		if (bpf_probe_read_user(&on, sizeof(on), (void *)arg) < 0)
			on = 1; /* unreadable: fail closed */
		if (on && owner_outside(&e, file))
			return tamper(&e, hook, RULE_SIGIO_OWNER, OBJ_NONE, 0);
	} else {
		int owner = 0;
		if (bpf_probe_read_user(&owner, sizeof(owner), (void *)arg) < 0)
			owner = 0; /* unreadable: the delivery decides */
		if (sigio_named_owner_outside(owner))
			return tamper(&e, hook, RULE_SIGIO_OWNER, OBJ_TASK, owner);
	}
	return sigio_mark(&e, file, hook);
}

/* The file a fown_struct belongs to: Linux 6.12 points back to it; before,
 * the fown_struct was embedded in the file (tamper.h's flavours). */
struct fown_struct___file {
	struct file *file;
} __attribute__((preserve_access_index));

static __always_inline __u64 sigio_file_of(struct fown_struct *fown)
{
	if (bpf_core_field_exists(struct fown_struct___file, file))
		return (__u64)BPF_CORE_READ((struct fown_struct___file *)fown, file);
	if (bpf_core_field_exists(struct file___owner_embedded, f_owner))
		return (__u64)fown - bpf_core_field_offset(struct file___owner_embedded, f_owner);
	return 0;
}

/*
 * sigio_deliver: the verdict on a signal to tsk from the file fown belongs
 * to, when enforced processes marked that file: refused unless tsk is
 * inside every sandbox that did. 0 for a file without a mark.
 *
 * A slot whose id is set and whose level is not yet (sigio_mark writes
 * the level second) reads as level 0, where no sandbox is: outside.
 */
static __always_inline int sigio_deliver(struct task_struct *tsk, struct fown_struct *fown)
{
	__u64 file = sigio_file_of(fown);
	if (!file)
		return 0;
	struct sigio_key k;
	sigio_key_of(&k, file);
	struct sigio_mark *m = bpf_map_lookup_elem(&sigio_marks, &k);
	if (!m)
		return 0;
	struct cgroup *cg = BPF_CORE_READ(tsk, cgroups, dfl_cgrp);
	__u64 cgid = 0;
	__s32 level = 0;
	for (int i = 0; i < 2; i++) {
		__u64 id = ENFORCERD_READ_ONCE(m->cgid[i]);
		__s32 l = ENFORCERD_READ_ONCE(m->level[i]);
		if (id && !cgroup_in_subtree(cg, l, id)) {
			cgid = id;
			level = l;
			break;
		}
	}
	if (!cgid) {
		if (!ENFORCERD_READ_ONCE(m->nobody))
			return 0;
		cgid = ENFORCERD_READ_ONCE(m->cgid[0]);
		level = ENFORCERD_READ_ONCE(m->level[0]);
	}
	/* The record names the marking sandbox as its ceiling, and that
	 * registration's posture decides now: audit-only records and
	 * allows; one that is gone still refuses (the arrangement was a
	 * sandbox's). */
	struct effective e = {};
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &cgid);
	if (c && (c->flags & CEILING_AUDIT_ONLY)) {
		e.audit = DENY_TAMPER;
		e.audit_cgid[4] = cgid;
	} else {
		e.deny = DENY_TAMPER;
		e.deny_cgid[4] = cgid;
	}
	e.sandbox_level = level;
	e.sandbox_cgid = cgid;
	e.net_level = -1;
	return tamper(&e, HOOK_FILE_SEND_SIGIOTASK, RULE_SIGIO_OWNER, OBJ_TASK,
		      BPF_CORE_READ(tsk, tgid));
}

#endif /* ENFORCERD_SIGIO_H */
