/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Process groups and sessions whose members are outside a sandbox (E4).
 * The tty core and exit send signals to whole process groups by itself
 * (SEND_SIG_PRIV: task_kill never runs): SIGWINCH, SIGTTIN/SIGTTOU, and
 * SIGHUP+SIGCONT to a process group an exit orphans with a stopped member
 * (kill_orphaned_pgrp). A sandbox sharing a session with processes
 * outside (enforcerd run from an interactive shell) must therefore never
 * reach a group with a member outside: these walks tell.
 *
 * The members of a process group (a session) are its processes' leaders,
 * linked on the group's (session's) struct pid through
 * task_struct.pid_links[PIDTYPE_PGID] ([PIDTYPE_SID]). A walk reads at
 * most MEMBERS_WALKED of them; a longer list counts as one with a member
 * outside (fail closed).
 */
#ifndef ENFORCERD_PGRP_H
#define ENFORCERD_PGRP_H

#include "enforcerd.h"

#define MEMBERS_WALKED 256

struct members_walk {
	struct hlist_node *node;
	__u64 off;  /* offset of task_struct.pid_links[type] */
	__u64 cgid; /* the sandbox: its cgroup id and level */
	__s32 level;
	__s32 ns_level; /* pgid: a process group number at this pid namespace level */
	__s32 pgid;	/* 0: any member counts; else only members of this group */
	__u32 outside;
};

/* pid_nr_at: the number of pid at pid namespace level l (0 when pid has
 * none there). */
static __always_inline int pid_nr_at(struct pid *pid, int l)
{
	if (!pid || l < 0 || l > 32 || (int)BPF_CORE_READ(pid, level) < l)
		return 0;
	int nr = 0;
	bpf_probe_read_kernel(&nr, sizeof(nr),
			      (void *)pid + bpf_core_field_offset(struct pid, numbers) +
				      l * bpf_core_type_size(struct upid) +
				      bpf_core_field_offset(struct upid, nr));
	return nr;
}

static long member_step(__u32 i, void *ctx)
{
	struct members_walk *w = ctx;
	struct hlist_node *n = w->node; /* a plain load: no CO-RE on w */
	if (!n)
		return 1;
	struct task_struct *t = (struct task_struct *)((void *)n - w->off);
	bool counts = true;
	if (w->pgid)
		counts = pid_nr_at(BPF_CORE_READ(t, signal, pids[PIDTYPE_PGID]), w->ns_level) == w->pgid;
	if (counts && !cgroup_in_subtree(BPF_CORE_READ(t, cgroups, dfl_cgrp), w->level, w->cgid)) {
		w->outside = 1;
		return 1;
	}
	w->node = BPF_CORE_READ(n, next);
	return 0;
}

/* members_outside: the process group or session pid (type PIDTYPE_PGID or
 * PIDTYPE_SID) has a member outside the sandbox (level, cgid) — with pgid
 * non-zero, a member of process group pgid (its number at pid namespace
 * level ns_level) — or more members than MEMBERS_WALKED. */
static __always_inline bool members_outside(struct pid *pid, int type, __s32 level, __u64 cgid,
					    __s32 ns_level, __s32 pgid)
{
	if (!pid)
		return false;
	struct members_walk w = {.cgid = cgid, .level = level, .ns_level = ns_level, .pgid = pgid};
	w.off = bpf_core_field_offset(struct task_struct, pid_links) + type * sizeof(struct hlist_node);
	if (type == PIDTYPE_SID)
		w.node = BPF_CORE_READ(pid, tasks[PIDTYPE_SID].first);
	else
		w.node = BPF_CORE_READ(pid, tasks[PIDTYPE_PGID].first);
	LOOP_STATE_UNKNOWN(w, outside, outside); /* loop.h */
	bpf_loop(MEMBERS_WALKED, member_step, &w, 0);
	return w.outside || w.node;
}

/* pgrp_outside: process group pgrp has a member outside the sandbox. */
static __always_inline bool pgrp_outside(struct pid *pgrp, __s32 level, __u64 cgid)
{
	return members_outside(pgrp, PIDTYPE_PGID, level, cgid, 0, 0);
}

/* session_outside: the current task's session has a member outside the
 * sandbox (with pgid non-zero: a member of the session's process group
 * numbered pgid in the current task's pid namespace). */
static __always_inline bool session_outside(__s32 level, __u64 cgid, __s32 pgid)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct pid *sid = BPF_CORE_READ(cur, signal, pids[PIDTYPE_SID]);
	return members_outside(sid, PIDTYPE_SID, level, cgid, current_pid_ns_level(), pgid);
}

#endif /* ENFORCERD_PGRP_H */
