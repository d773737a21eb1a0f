//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * No programs: the maps the objects share and the types user space mirrors,
 * gathered in one object for bpf2go.
 *
 *  - Every map of this object (but its data section) is shared: enforcer
 *    creates it once from this spec, pins it under its name, and hands the
 *    same map to every object that declares it (the headers declare them).
 *  - The types below reach BTF through unused_shared_types, so bpf2go
 *    generates their Go declarations (-type in gen.go): SharedEvent,
 *    SharedCeiling, SharedExecKey, SharedExecAllowBit, SharedExecAllowMarker, SharedEndpointList, SharedRootSet, SharedDeviceList and the enums SharedHookId,
 *    SharedRuleId, SharedRuleLayout, SharedObjectKind, SharedDecision, SharedDenyBit, SharedCeilingFlag,
 *    SharedStatIndex, SharedLimits, SharedFsMagic, SharedEndpointKind,
 *    SharedEndpointLimits, SharedDeviceKind, SharedDeviceLimits,
 *    SharedDeviceFlag; SharedTallyKey, SharedTallyOverflowKey and
 *    SharedTallyLimits (tally.h).
 */
#include "exec.h"
#include "ipc.h"
#include "mqueue.h"
#include "shm.h"
#include "fifo.h"
#include "endpoints.h"
#include "devices.h"
#include "sigio.h"
#define ENFORCERD_ROOTS_TYPES_ONLY /* the map and its types */
#include "roots.h"

struct shared_types {
	struct event event;
	struct exec_key exec_key;
	enum exec_allow_bit exec_allow_bit;
	enum exec_allow_marker exec_allow_marker;
	struct endpoint_list endpoint_list;
	enum endpoint_kind endpoint_kind;
	enum endpoint_limits endpoint_limits;
	struct root_set root_set;
	struct ipc_dir ipc_dir;
	struct device_list device_list;
	enum device_kind device_kind;
	enum device_limits device_limits;
	enum device_flag device_flag;
	enum hook_id hook_id;
	enum rule_id rule_id;
	enum rule_layout rule_layout;
	enum object_kind object_kind;
	enum decision decision;
	enum deny_bit deny_bit;
	enum ceiling_flag ceiling_flag;
	enum stat_index stat_index;
	enum limits limits;
	enum fs_magic fs_magic;
	struct tally_key tally_key;
	struct tally_overflow_key tally_overflow_key;
	enum tally_limits tally_limits;
};

const struct shared_types *unused_shared_types __attribute__((unused));
