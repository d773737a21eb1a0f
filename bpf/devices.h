/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Device nodes are host objects (docs/threat-model.md, "Devices and
 * terminals"): under every ceiling, opening, reading, writing, ioctl and
 * mmap of a character or block device is decided by an allow list
 * (device.bpf.c). This header holds what user space writes and the kernel
 * records for that decision:
 *
 *  - device_allow: registered cgroup id -> the devices the operator lists
 *    for it (enforcer.Entry.AllowDevices), the terminals declared its own
 *    at registration (enforcer.Entry.Terminals) and its flags
 *    (DEVICES_DENY_CONSOLE_EGRESS: enforcer.Entry.DenyConsoleEgress). No
 *    entry: nothing listed. A registration writes its list before its
 *    ceiling (enforcer/devices.go); the lists are read live, never cached.
 *  - pty_owners: pty slave inode address -> the cgroup ancestors of the
 *    process that created the pty from /dev/ptmx (recorded when devpts
 *    instantiates the slave, removed when the inode is freed: a record
 *    never outlives its pty, so a sandbox cannot claim a pty made
 *    outside). A pty without a record (made outside, or the map was full)
 *    is not the sandbox's: fail closed.
 *
 * The meet: a device or terminal is usable only when every registered,
 * active ancestor lists it (or, for a pty, saw it created in its subtree):
 * device_decision walks the ancestors like endpoint_decision does.
 */
#ifndef ENFORCERD_DEVICES_H
#define ENFORCERD_DEVICES_H

#include "enforcerd.h"
#include "ipc.h" /* struct owner */

enum device_limits {
	MAX_ALLOW_DEVICES = 16, /* enforcer.MaxAllowDevices */
	MAX_TERMINALS = 8,	/* enforcer.MaxTerminals */
};

/* device_entry.kind */
enum device_kind {
	DEVICE_CHR = 1,
	DEVICE_BLK = 2,
};

/* Bits of device_list.flags. */
enum device_flag {
	DEVICES_DENY_CONSOLE_EGRESS = 1U << 0, /* under network=false, an own
						* terminal that leaves the
						* machine is refused */
};

struct device_entry {
	__u32 dev;  /* kernel encoding major<<20|minor */
	__u32 kind; /* enum device_kind */
};

struct terminal_entry {
	__u32 dev;     /* the tty's device number, kernel encoding */
	__u32 pts_dev; /* a pty slave: its devpts instance's s_dev; else 0 */
};

/* What one registered cgroup lists. */
struct device_list {
	__u32 ndev;  /* entries used in dev */
	__u32 nterm; /* entries used in term */
	__u32 flags; /* enum device_flag */
	__u32 pad;
	struct device_entry dev[MAX_ALLOW_DEVICES];
	struct terminal_entry term[MAX_TERMINALS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* cgroup v2 id, as in ceilings */
	__type(value, struct device_list);
} device_allow SEC(".maps");

/* kernel.pty.max is 4096 by default (each devpts instance adds at most its
 * own max, which counts against the same total): twice that. */
#define MAX_PTY_OWNERS 8192

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PTY_OWNERS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* struct inode address of the pty slave */
	__type(value, struct owner);
} pty_owners SEC(".maps");

/* The state of one device_decision walk. */
struct device_walk {
	__u32 dev;
	__u32 pts_dev;
	__u32 kind;	  /* enum device_kind */
	__u32 created;	  /* bit L: a pty created below the level-L ancestor */
	__u32 egress;	  /* the use leaves the machine (console, serial) */
	__u32 miss_deny;  /* an enforcing ancestor lists it not */
	__u32 miss_audit; /* an audit-only ancestor lists it not */
	__u32 seen_deny;  /* an enforcing ancestor was seen */
	__u32 egress_deny, egress_audit; /* an ancestor refuses the egress */
};

static __always_inline bool device_listed(const struct device_list *l,
					  const struct device_walk *w)
{
	__u32 n = l->ndev;
	for (int i = 0; i < MAX_ALLOW_DEVICES; i++) {
		if (i >= n)
			break;
		if (l->dev[i].dev == w->dev && l->dev[i].kind == w->kind)
			return true;
	}
	if (w->kind != DEVICE_CHR)
		return false;
	n = l->nterm;
	for (int i = 0; i < MAX_TERMINALS; i++) {
		if (i >= n)
			break;
		if (l->term[i].dev == w->dev && l->term[i].pts_dev == w->pts_dev)
			return true;
	}
	return false;
}

static long device_level(__u32 level, void *ctx)
{
	struct device_walk *w = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id)
		return 1;
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c || (c->flags & CEILING_PENDING))
		return 0;
	bool audit = (c->flags & CEILING_AUDIT_ONLY) != 0;
	if (!audit)
		w->seen_deny = 1;
	struct device_list *l = bpf_map_lookup_elem(&device_allow, &id);
	if (w->egress && l && (l->flags & DEVICES_DENY_CONSOLE_EGRESS) &&
	    (c->deny & DENY_NETWORK)) {
		if (audit)
			w->egress_audit = 1;
		else
			w->egress_deny = 1;
	}
	if (level < 32 && (w->created & (1U << level)))
		return 0;
	if (l && device_listed(l, w))
		return 0;
	if (audit)
		w->miss_audit = 1;
	else
		w->miss_deny = 1;
	return 0;
}

/*
 * device_decision: d is the tamper verdict of the current task
 * (verdict(e, DENY_TAMPER): DECISION_DENIED or DECISION_AUDITED); the
 * result is 0 when every active ancestor lists the device of w (or saw the
 * pty created in its subtree), DECISION_AUDITED when only audit-only ones
 * miss it, else DECISION_DENIED. Fail direction: a task deeper than
 * MAX_CGROUP_LEVEL, or a denial with no enforcing ancestor found by the
 * walk (the entry went away under us), keeps d.
 */
static __always_inline int device_decision(int d, struct device_walk *w)
{
	if (!d)
		return 0;
	if (bpf_get_current_ancestor_cgroup_id(MAX_CGROUP_LEVEL))
		return d;
	bpf_loop(MAX_CGROUP_LEVEL, device_level, w, 0);
	if (w->miss_deny || (d == DECISION_DENIED && !w->seen_deny))
		return DECISION_DENIED;
	if (w->miss_audit)
		return DECISION_AUDITED;
	return 0;
}

/* pty_created_mask: bit L set when the pty slave inode at address ino was
 * created by a process below the current task's level-L ancestor. 0: no
 * record (created outside every sandbox, or unrecorded). */
static __always_inline __u32 pty_created_mask(__u64 ino)
{
	struct owner *o = bpf_map_lookup_elem(&pty_owners, &ino);
	if (!o)
		return 0;
	__u32 mask = 0;
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(i);
		if (!id)
			break;
		if (o->anc[i] == id)
			mask |= 1U << i;
	}
	return mask;
}

#endif /* ENFORCERD_DEVICES_H */
