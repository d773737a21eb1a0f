/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Creators of SysV IPC objects and kernel keys (ipc.bpf.c; POSIX message
 * queues: mqueue.h), in maps user
 * space pins with the others so that the records outlive an upgrade.
 */
#ifndef ENFORCERD_IPC_H
#define ENFORCERD_IPC_H

#include "enforcerd.h"

/* The creator of an object: its cgroup's ancestor at every level (index
 * = level; 0 below the creator's own level). */
struct owner {
	__u64 anc[MAX_CGROUP_LEVEL];
};

/* owner_inside: the creator o was in the subtree of the current task's
 * sandbox (e: its resolved ceiling), the deepest registered ancestor. */
static __always_inline bool owner_inside(const struct owner *o,
					 const struct effective *e)
{
	__u32 level = e->sandbox_level;
	if (level >= MAX_CGROUP_LEVEL || !e->sandbox_cgid)
		return false;
	return o->anc[level] == e->sandbox_cgid;
}

/* Live objects: SysV IPC objects by struct kern_ipc_perm address, keys by
 * struct key address. Not preallocated: memory follows the live objects.
 * Both are pinned and shared, so records survive an upgrade. */
#define MAX_OWNERS 65536

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_OWNERS);
	__type(key, __u64);
	__type(value, struct owner);
} ipc_owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_OWNERS);
	__type(key, __u64);
	__type(value, struct owner);
} key_owners SEC(".maps");

#endif /* ENFORCERD_IPC_H */
