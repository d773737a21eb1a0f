//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Activation of pending ceilings (README, pending registrations): a
 * container is registered at the OCI createRuntime hook, while the runtime's
 * own init still sets up mounts and files inside the container's cgroup. Its
 * ceiling takes effect at the first exec in that cgroup's subtree after
 * registration (the entrypoint), before the new program's first instruction:
 * sched_process_exec fires after the new image is installed and before the
 * return to user space.
 *
 * A tp_btf program, so it also runs on hosts without BPF LSM.
 */
#include "enforcerd.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	/* Gate: resolve()'s cache entry for this cgroup, current under the
	 * generation, says whether any ancestor is pending; when it says none,
	 * the walk below has nothing to do (every exec on the host passes
	 * here). A missing or stale entry walks. Registration writes the
	 * pending ceiling before it changes the generation, so an exec after
	 * the registration returned never finds a current entry that predates
	 * it. */
	__u32 zero = 0;
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	if (cfg) {
		struct effective e = {};
		if (cache_copy(cfg->generation, current_cgroup_id(), &e) >= 0 && !e.pending)
			return 0;
	}
	for (int level = 0; level < MAX_CGROUP_LEVEL; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			return 0;
		struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
		if (c && (c->flags & CEILING_PENDING)) {
			/* One atomic clear of the bit, not a read and a write
			 * of the flags: the daemon replacing this ceiling
			 * meanwhile frees the element, and the map hands it
			 * to another cgroup's ceiling at once; a whole-word
			 * write would copy this one's flags (AUDIT_ONLY, for
			 * one) onto it. Clearing PENDING there puts that
			 * registration in force early: a narrowing. */
			__sync_fetch_and_and(&c->flags, ~CEILING_PENDING);
			__u64 *n = bpf_map_lookup_elem(&activations, &id);
			if (n)
				__sync_fetch_and_add(n, 1);
			/* Invalidate every cached resolve() result. */
			if (cfg)
				__sync_fetch_and_add(&cfg->generation, 1);
		}
	}
	return 0;
}
