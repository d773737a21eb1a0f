/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between user space and every object: the ceiling one
 * registered cgroup imposes, the maps enforcer (Go) creates once, pins and
 * hands to every object (so one Register() is seen by every hook), and the
 * bounds both sides share.
 *
 * Go uses the enums below through bpf2go (-type, shared.bpf.c); their
 * values and the layout of every map's key and value are part of the pinned
 * state an upgrade keeps: change them only together with a migration.
 */
#ifndef ENFORCERD_MAPS_H
#define ENFORCERD_MAPS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "consts.h"

/* map_op_err: the error a map helper returned (bpf_map_update_elem,
 * bpf_map_delete_elem, ...), 0 or -errno, read in its low 32 bits. The
 * verifier turns these helpers into direct calls of the map's operations,
 * which returned int until Linux 6.4: on 6.1 a -E2BIG reaches the program
 * as 4294967289 (zero-extended), which is no negative long, so a compare
 * with -E2BIG on the whole register never matches there. Nonzero tests
 * need no cast. */
static __always_inline int map_op_err(long r)
{
	return (int)r;
}

enum limits {
	/* Room for 65,536 registered containers. */
	MAX_CEILINGS = 65536,
	/* Bounded ancestor walk. enforcer.Register refuses cgroups at level
	 * >= MAX_CGROUP_LEVEL, so every enforced cgroup is seen by the walk;
	 * a process deeper than the bound below an enforced cgroup is denied
	 * everything (walk.h). */
	MAX_CGROUP_LEVEL = 32,
	/* Writable roots (roots.h): at most MAX_WRITE_ROOTS per registration;
	 * a task below more than MAX_ROOT_CEILINGS registrations with roots
	 * may write nowhere; the climb from a write's target stops after
	 * MAX_ROOT_DEPTH levels (past it: outside). */
	MAX_WRITE_ROOTS = 16,
	MAX_ROOT_CEILINGS = 4,
	MAX_ROOT_DEPTH = 64,
};

/* Bits of struct ceiling.deny: what a registered cgroup forbids. The meet of
 * two ceilings is the union of their deny bits, so the ancestor walk ORs. */
enum deny_bit {
	DENY_NETWORK = 1U << 0,
	DENY_WRITE = 1U << 1,
	DENY_SHELL = 1U << 2,	    /* shell=none: exec only allowed files */
	DENY_SHELL_WRITE = 1U << 3, /* shell=read_only: exec'd processes are
				     * write-denied; no exec of memfds or of
				     * files the sandbox wrote */
	DENY_TAMPER = 1U << 4,	    /* implied by every registration: no bpf(),
				     * mounts, cgroup escape, ptrace/signals
				     * outside, pin removal, TIOCSTI */
};
#define DENY_ALL (DENY_NETWORK | DENY_WRITE | DENY_SHELL | DENY_SHELL_WRITE | DENY_TAMPER)
#define NUM_DENY_BITS 5

/* Bits of struct ceiling.flags. */
enum ceiling_flag {
	CEILING_AUDIT_ONLY = 1U << 0, /* record would-be denials, allow */
	CEILING_PENDING = 1U << 1,    /* registered, not yet in force: the
				       * first exec in the subtree activates it
				       * (lifecycle.bpf.c) */
	CEILING_PARTIAL_OK = 1U << 2, /* accepted with partial coverage
				       * (enforcer.Entry.AllowPartial); the
				       * programs do not read it */
	CEILING_WRITE_ROOTS = 1U << 3, /* DENY_WRITE is lifted beneath the
					* cgroup's entry in write_roots
					* (roots.h); set only after that entry
					* is written */
};

/* The ceiling one registered cgroup imposes on its whole subtree. */
struct ceiling {
	__u32 deny;  /* enum deny_bit */
	__u32 flags; /* enum ceiling_flag */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64); /* cgroup v2 id (kernfs inode number) */
	__type(value, struct ceiling);
} ceilings SEC(".maps");

/* Denial records (struct event, event.h). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* stats[STAT_LOST]: denial records dropped because the ring buffer was full
 * (the denials are counted in the tally all the same, tally.h).
 * stats[STAT_UNATTRIBUTED]: denials counted nowhere else (the tally and its
 * overflow map full, or no scratch slot free): exact, but of no container.
 * Both are added to atomically. Enforcement never waits on the ring buffer
 * (threat model E6). */
enum stat_index {
	STAT_LOST = 0,
	STAT_UNATTRIBUTED = 1,
	STAT_MAX = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * enforcerd_config[0].generation changes (to a fresh random value from user
 * space, or an atomic increment from lifecycle.bpf.c) after every change of
 * the ceilings map. resolve() (walk.h) caches its result per cgroup id
 * together with the generation it was computed under, so a hook pays one
 * hash lookup instead of the ancestor walk, and any change invalidates every
 * cached result. Order that keeps this correct: writers change ceilings
 * first, then the generation; resolve() reads the generation first, then
 * walks.
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

/*
 * activations[cgroup id]: how many times sched_process_exec (lifecycle.bpf.c)
 * activated that cgroup's pending ceiling. enforcer.Register creates the
 * entry (0) before it rewrites a pending registration, and reads it again
 * after: an activation in between (the exec cleared CEILING_PENDING of the
 * old entry, and the rewrite would have set it again) makes it write the
 * entry once more as active. The program only adds to existing entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__type(key, __u64);
	__type(value, __u64);
} activations SEC(".maps");

#endif /* ENFORCERD_MAPS_H */
