/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Aggregation of denial records (the tally): the first record of each
 * distinct denial goes through the events ring buffer with full detail;
 * every denial, the first included, is counted in the tally map installed in
 * tally_slot[0], keyed by what makes a denial distinct (struct tally_key).
 * User space (enforcer.Tally) swaps a fresh tally map in, which waits for
 * every program that may still use the old one (the kernel runs
 * synchronize_rcu on an update of a map-in-map), then reads the old one: its
 * counts are final, so the summaries built from them are exact.
 *
 * When the tally map is full, the denial is counted per (ceiling cgroup,
 * hook, decision, deny bit) in the map installed in tally_overflow_slot[0],
 * and its record still goes through the ring buffer (full detail, counted
 * only there); when that map is full too, or no scratch slot is free, in
 * stats[STAT_UNATTRIBUTED]. Every denial is counted exactly once in one of
 * the three. Records the ring buffer cannot take are counted in
 * stats[STAT_LOST] (atomically) and are in the counts all the same.
 *
 * Records are built in a per-CPU scratch slot (event_scratch), not on the
 * stack (the verifier's combined stack limit) and not in the ring buffer
 * (a record of a repeat must not take room there): a slot is taken with a
 * compare-and-swap, so a program preempted on this CPU, or interrupted by a
 * hook running in softirq context, never shares one.
 */
#ifndef ENFORCERD_TALLY_H
#define ENFORCERD_TALLY_H

#include "maps.h"

enum tally_limits {
	TALLY_MAX = 8192,	   /* distinct denials per summary interval */
	TALLY_OVERFLOW_MAX = 1024, /* overflowing (cgroup, hook, decision,
				    * bit) per summary interval */
	SCRATCH_SLOTS = 4,	   /* records being built at once per CPU:
				    * task, softirq, hardirq, one preempted */
};

/*
 * What makes a denial distinct: the registered cgroup whose ceiling decided,
 * the hook, the decision and deny bit (with the rule above RULE_SHIFT,
 * event.h), and the object (struct event's object
 * fields; for files also a hash of the recorded path components, so that
 * creates of different names, which have no inode yet, stay distinct). The
 * acting process (pid, comm, own cgroup) is not part of it.
 * Layout mirrored by bpf2go (-type tally_key): append nothing, move nothing.
 */
struct tally_key {
	__u64 ceiling_cgroup_id;
	__u64 object_id; /* event.object_id */
	__u64 names_hash;
	__u32 dev;
	__u16 hook;
	__u16 decision;
	__u32 deny_bit;
	__u32 object_kind;
	__u32 sock_type;
	__u32 protocol;
	__u16 family;
	__u16 port;
	__u32 pad; /* 0 */
	__u8 addr[16];
};

/* The overflow counters' key: a denial the tally map had no room for. */
struct tally_overflow_key {
	__u64 ceiling_cgroup_id;
	__u16 hook;
	__u16 decision;
	__u32 deny_bit;
};

/* Inner map templates: user space creates the maps it installs from them. */
struct tally_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TALLY_MAX);
	__type(key, struct tally_key);
	__type(value, __u64); /* denials since the map was installed */
};

struct tally_overflow_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TALLY_OVERFLOW_MAX);
	__type(key, struct tally_overflow_key);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct tally_map);
} tally_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct tally_overflow_map);
} tally_overflow_slot SEC(".maps");

/* stat_add adds one to a counter of the stats map, atomically. */
static __always_inline void stat_add(__u32 index)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &index);
	if (v)
		__sync_fetch_and_add(v, 1);
}

/* tally_overflow counts a denial the tally map had no room for (k filled
 * by the caller); without room there either, in stats[STAT_UNATTRIBUTED]. */
static __always_inline void tally_overflow(struct tally_overflow_key *k, __u64 *zero)
{
	__u32 slot = 0;
	void *m = bpf_map_lookup_elem(&tally_overflow_slot, &slot);
	if (m) {
		__u64 *n = bpf_map_lookup_elem(m, k);
		if (!n) {
			*zero = 0;
			bpf_map_update_elem(m, k, zero, BPF_NOEXIST);
			n = bpf_map_lookup_elem(m, k);
		}
		if (n) {
			__sync_fetch_and_add(n, 1);
			return;
		}
	}
	stat_add(STAT_UNATTRIBUTED);
}

#endif /* ENFORCERD_TALLY_H */
