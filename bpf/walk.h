/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which ceiling applies to the current task: the ancestor walk over its
 * cgroups, the per-cgroup cache in front of it (resolve), and the verdict
 * for one deny bit.
 */
#ifndef ENFORCERD_WALK_H
#define ENFORCERD_WALK_H

#include "maps.h"
#include "loop.h"

/* The result of the ancestor walk for the current task. */
struct effective {
	__u32 deny;  /* union of deny bits of enforcing ancestors */
	__u32 audit; /* union of deny bits of audit-only ancestors */
	__u64 deny_cgid[NUM_DENY_BITS];	 /* deepest enforcing cgroup per bit */
	__u64 audit_cgid[NUM_DENY_BITS]; /* deepest audit-only cgroup per bit */
	__s32 net_level;     /* level of the deepest cgroup enforcing a network
			      * denial, else of the deepest auditing one; -1 */
	__s32 sandbox_level; /* level of the deepest registered cgroup, -1 */
	__s32 pending;	     /* some ancestor's registration is still pending:
			      * the next exec is an entrypoint (exec.bpf.c,
			      * lifecycle.bpf.c); set even when nothing is
			      * enforced yet */
	__u32 seen;	     /* enum seen_bit: what the walk saw of the
			      * ancestors beyond the deny bits. Takes what
			      * was padding: the cache's layout is pinned
			      * state, and an entry an older build wrote (0
			      * here) reads as unconditional write denials
			      * and as network denials to walk again */
	__u64 sandbox_cgid;  /* its id: the sandbox boundary for "outside" */
};

/* Bits of effective.seen. WR_*: which ancestors' write denials hold only
 * outside their writable roots (roots.h): DENY_WRITE in deny (audit) is
 * lifted beneath roots only when no *_TOTAL bit says an ancestor (or the
 * task, exec.h) denies writes unconditionally. SEEN_NET_ONE: exactly one
 * active ancestor denies or audits network, and the walk reached the
 * task's own level (endpoints.h decides on that ancestor's list alone;
 * without the bit it walks the ancestors again). SEEN_SHELL_ONE: exactly
 * one active ancestor denies or audits exec (shell=none or read_only), no
 * ancestor is pending, and the walk reached the task's own level (exec.h
 * restrict_since reads that ancestor's registration time alone; without
 * the bit it walks the ancestors again). */
enum seen_bit {
	WR_DENY_TOTAL = 1U << 0,  /* an enforcing ancestor without roots */
	WR_DENY_ROOTS = 1U << 1,  /* an enforcing ancestor with roots */
	WR_AUDIT_TOTAL = 1U << 2, /* an audit-only ancestor without roots */
	WR_AUDIT_ROOTS = 1U << 3, /* an audit-only ancestor with roots */
	SEEN_NET_ONE = 1U << 4,
	SEEN_SHELL_ONE = 1U << 5,
};

/* bit_index: the index of a deny bit in effective.deny_cgid/audit_cgid. */
static __always_inline int bit_index(__u32 bit)
{
	switch (bit) {
	case DENY_NETWORK:
		return 0;
	case DENY_WRITE:
		return 1;
	case DENY_SHELL:
		return 2;
	case DENY_SHELL_WRITE:
		return 3;
	default:
		return 4;
	}
}

/*
 * walk visits the current task's cgroup ancestors from the root (level 0)
 * down, and ORs the deny bits of every registered, active ceiling: the meet of
 * every enforced ancestor (threat model E1: a sub-cgroup the child creates is
 * still below the registered one, so it can never widen anything).
 *
 * Fail direction: a process below an enforced cgroup but deeper than
 * MAX_CGROUP_LEVEL is denied everything; a pending entry is not yet in force.
 * Sets found when any ancestor is registered (enforced or audited).
 *
 * One level per bpf_loop() callback: the verifier checks the body once, not
 * once per level, which keeps loading fast and within the 6.1 verifier.
 */
struct resolve_cache_entry {
	__u64 generation;
	__s32 found;
	__u32 cgid_lo; /* the low 32 bits of the key: see cache_copy */
	struct effective e;
};

/* The walk fills a cache entry in place (one copy on the stack: the
 * callers' frames and resolve()'s add up against the verifier's combined
 * stack limit). */
struct walk_ctx {
	struct resolve_cache_entry n;
	int done;
	int net_ancestors; /* active ancestors denying or auditing network */
	int shell_ancestors; /* active ancestors denying or auditing exec */
	__u64 last;	   /* the id of the deepest level walked */
};

static long walk_level(__u32 level, void *ctx)
{
	struct walk_ctx *w = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id) {
		w->done = 1;
		return 1;
	}
	w->last = id;
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c)
		return 0;
	__u32 flags = c->flags;
	/* Every registration implies tamper protection. */
	__u32 deny = (c->deny & DENY_ALL) | DENY_TAMPER;
	if (flags & CEILING_PENDING) {
		w->n.e.pending = 1;
		return 0;
	}
	w->n.found = 1;
	w->n.e.sandbox_level = level;
	w->n.e.sandbox_cgid = id;
	__u64 *cgid = w->n.e.deny_cgid;
	if (flags & CEILING_AUDIT_ONLY) {
		w->n.e.audit |= deny;
		cgid = w->n.e.audit_cgid;
	} else {
		w->n.e.deny |= deny;
	}
	if (deny & DENY_NETWORK) {
		cgid[0] = id;
		/* net_level is the level of the cgroup the rules compare
		 * with it: deny_cgid[0] when an enforcing ancestor denies
		 * network (the verdict is then a denial), else
		 * audit_cgid[0]. An audit-only one below an enforcing one
		 * (whose bit is in e.deny by now) leaves it. */
		if (!(flags & CEILING_AUDIT_ONLY) || !(w->n.e.deny & DENY_NETWORK))
			w->n.e.net_level = level;
		w->net_ancestors += 1;
	}
	if (deny & DENY_WRITE) {
		cgid[1] = id;
		bool roots = (flags & CEILING_WRITE_ROOTS) != 0;
		if (flags & CEILING_AUDIT_ONLY)
			w->n.e.seen |= roots ? WR_AUDIT_ROOTS : WR_AUDIT_TOTAL;
		else
			w->n.e.seen |= roots ? WR_DENY_ROOTS : WR_DENY_TOTAL;
	}
	if (deny & DENY_SHELL)
		cgid[2] = id;
	if (deny & DENY_SHELL_WRITE)
		cgid[3] = id;
	if (deny & (DENY_SHELL | DENY_SHELL_WRITE))
		w->shell_ancestors += 1;
	cgid[4] = id; /* DENY_TAMPER */
	return 0;
}

/* walk fills w->n (found, e) for the current task; *w need not be
 * initialised: it is zeroed first, unknown to the verifier (loop.h). */
static __always_inline void walk(struct walk_ctx *w)
{
	LOOP_CTX_UNKNOWN(*w);
	w->n.e.net_level = -1;
	w->n.e.sandbox_level = -1;
	bpf_loop(MAX_CGROUP_LEVEL, walk_level, w, 0);
	/* Deeper than the bound: if anything above was enforced, deny all. */
	if (!w->done && w->n.found &&
	    bpf_get_current_ancestor_cgroup_id(MAX_CGROUP_LEVEL)) {
		w->n.e.deny |= DENY_ALL;
		w->n.e.seen |= WR_DENY_TOTAL;
	}
	if (w->done && w->net_ancestors == 1)
		w->n.e.seen |= SEEN_NET_ONE;
	if (w->done && w->shell_ancestors == 1 && !w->n.e.pending)
		w->n.e.seen |= SEEN_SHELL_ONE;
}

/* resolve()'s results by the current task's cgroup id, valid while their
 * generation is the one in enforcerd_config (maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* current cgroup id */
	__type(value, struct resolve_cache_entry);
} resolve_cache SEC(".maps");

#define ENFORCERD_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define ENFORCERD_BARRIER() asm volatile("" ::: "memory")

/* cache_copy: resolve_cache's answer for cgroup id under generation gen
 * (read from enforcerd_config first: maps.h) into *e: 1 registered (*e
 * copied), 0 not (*e's pending set), -1 none (missing, stale, or rewritten
 * while it was read; *e zeroed again, as every caller passes it).
 *
 * An LRU hash recycles an evicted element for another key at once, without
 * waiting for the readers that hold it (no RCU grace period), so the
 * element may be rewritten for another cgroup while it is copied. The
 * writer copies the value from its first byte, where the generation and
 * the key's low bits are: checking both again after the copy refuses an
 * element whose rewrite began before the copy ended. Elements of a build
 * that left cgid_lo 0 miss once and are walked again. */
static __always_inline int cache_copy(__u64 gen, __u64 id, struct effective *e)
{
	struct resolve_cache_entry *c = bpf_map_lookup_elem(&resolve_cache, &id);
	if (!c)
		return -1;
	if (ENFORCERD_READ_ONCE(c->generation) != gen || ENFORCERD_READ_ONCE(c->cgid_lo) != (__u32)id)
		return -1;
	int found = ENFORCERD_READ_ONCE(c->found);
	if (found)
		__builtin_memcpy(e, &c->e, sizeof(*e));
	else
		e->pending = ENFORCERD_READ_ONCE(c->e.pending);
	ENFORCERD_BARRIER();
	if (ENFORCERD_READ_ONCE(c->generation) != gen || ENFORCERD_READ_ONCE(c->cgid_lo) != (__u32)id) {
		__builtin_memset(e, 0, sizeof(*e));
		return -1;
	}
	return found ? 1 : 0;
}

/* current_cgroup_id: bpf_get_current_cgroup_id() by BTF loads of
 * current->cgroups->dfl_cgrp->kn->id (the helper takes and drops the RCU
 * read lock around the same loads; an LSM or tracing program already runs
 * inside one). cgroup-BPF objects define ENFORCERD_CGROUP_ID_HELPER and
 * keep the helper. */
static __always_inline __u64 current_cgroup_id(void)
{
#ifdef ENFORCERD_CGROUP_ID_HELPER
	return bpf_get_current_cgroup_id();
#else
	struct task_struct *t = bpf_get_current_task_btf();
	return t->cgroups->dfl_cgrp->kn->id;
#endif
}

/*
 * This CPU's two last answers, in front of resolve_cache: each slot holds
 * the cgroup id and the generation it holds for, whether an ancestor is
 * registered, and the effective ceiling. A task runs hook after hook from
 * one cgroup, and a per-CPU array lookup is inlined by the verifier, where
 * the hash needs a hash of the key and a bucket walk. Two slots, because
 * two processes of different cgroups often take turns on a CPU (a client
 * and its server, a pipeline's two ends): with one, each found the other's
 * answer and asked the hash on every hook.
 *
 * resolve() reads slot 0, then slot 1: the order is fixed, because an
 * index to read first costs every hit its load and an address computed
 * at run time (measured: more than the miss of slot 0 it saves). A new
 * answer goes into a slot that holds none under the current generation,
 * slot 0 first, else into the two in turn (next). next is only a choice
 * of slot: a write of it lost to an interleaved program costs a miss,
 * never an answer.
 *
 * Programs on one CPU may interleave (a preempted program, one in an
 * interrupt): a slot's seq is even while its fields are whole. A writer
 * claims the slot by moving seq from even to odd with a
 * compare-and-exchange (a writer that finds it odd, or loses the exchange,
 * keeps nothing) and moves it to the next even number when done; a reader
 * accepts the fields only when seq was even and the same before and after
 * it read them.
 *
 * It replaced a map of one slot, resolve_last, whose pin an upgrade
 * removes (enforcer's retired maps): a pinned map cannot change its size.
 */
struct resolve_slot {
	__u64 seq;
	__u64 cgid;
	__u64 generation;
	__s32 found;
	__u32 pad;
	struct effective e;
};

struct resolve_recent {
	__u32 next; /* the slot a new answer replaces when both hold one (0 or 1) */
	__u32 pad;
	struct resolve_slot slot[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct resolve_recent);
} resolve_recent SEC(".maps");

/* slot_hit: l holds the answer for cgroup id under gen: 0 not (*e's
 * pending set from it), 1 registered (*e copied from it), -1 no answer
 * (*e may be partly written: resolve() zeroes it before the slow path).
 * bits: 0, or the deny bits that alone decide the caller's rules
 * (resolve_for): a registered answer that denies and audits none of them
 * is then 0, without the copy and without *e's pending. */
static __always_inline int slot_hit(struct resolve_slot *l, __u64 gen, __u64 id,
				    struct effective *e, __u32 bits)
{
	__u64 s = ENFORCERD_READ_ONCE(l->seq);
	if (s & 1)
		return -1;
	ENFORCERD_BARRIER();
	if (ENFORCERD_READ_ONCE(l->cgid) != id || ENFORCERD_READ_ONCE(l->generation) != gen)
		return -1;
	int found = ENFORCERD_READ_ONCE(l->found);
	if (found && bits &&
	    !((ENFORCERD_READ_ONCE(l->e.deny) | ENFORCERD_READ_ONCE(l->e.audit)) & bits))
		found = 0; /* nothing of bits: the caller's rules allow */
	else if (found)
		__builtin_memcpy(e, &l->e, sizeof(*e));
	else
		e->pending = ENFORCERD_READ_ONCE(l->e.pending);
	ENFORCERD_BARRIER();
	if (ENFORCERD_READ_ONCE(l->seq) != s)
		return -1; /* rewritten meanwhile */
	return found ? 1 : 0;
}

/* slot_store: keep the answer (found, *e) for cgroup id under gen in l,
 * unless another program on this CPU is writing it. */
static __always_inline void slot_store(struct resolve_slot *l, __u64 gen, __u64 id,
				       int found, const struct effective *e)
{
	__u64 s = ENFORCERD_READ_ONCE(l->seq);
	if (s & 1)
		return;
	if (__sync_val_compare_and_swap(&l->seq, s, s + 1) != s)
		return;
	ENFORCERD_BARRIER();
	l->cgid = id;
	l->generation = gen;
	l->found = found;
	__builtin_memcpy(&l->e, e, sizeof(*e));
	ENFORCERD_BARRIER();
	__sync_fetch_and_add(&l->seq, 1);
}

/* keep_answer: keep the answer (found, *e) for cgroup id under gen in one
 * of this CPU's two slots: one whose answer is for another generation
 * (slot 0 first), else the one next names. A stale answer left in a slot
 * never matches again: a replaced generation does not come back (user
 * space writes random 64-bit values, the exec gate adds one), and a cgroup
 * id is never reused while the host runs. */
static __always_inline void keep_answer(__u64 gen, __u64 id, int found, const struct effective *e)
{
	__u32 zero = 0;
	struct resolve_recent *r = bpf_map_lookup_elem(&resolve_recent, &zero);
	if (!r)
		return;
	struct resolve_slot *l;
	if (ENFORCERD_READ_ONCE(r->slot[0].generation) != gen) {
		l = &r->slot[0];
	} else if (ENFORCERD_READ_ONCE(r->slot[1].generation) != gen) {
		l = &r->slot[1];
	} else if (ENFORCERD_READ_ONCE(r->next) & 1) {
		l = &r->slot[1];
		r->next = 0;
	} else {
		l = &r->slot[0];
		r->next = 1;
	}
	slot_store(l, gen, id, found, e);
}

/*
 * resolve_slow: resolve() past this CPU's two answers: the per-cgroup
 * cache, then the walk; it keeps what it found in one of the CPU's two
 * slots (keep_answer).
 * A global function: the verifier checks the walk once per program.
 */
__attribute__((noinline)) int resolve_slow(struct effective *e)
{
	if (!e)
		return 0;
	__u32 zero = 0;
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	__u64 gen = 0;
	__u64 id = current_cgroup_id();
	if (cfg) {
		gen = cfg->generation;
		int h = cache_copy(gen, id, e);
		if (h >= 0) {
			keep_answer(gen, id, h, e);
			return h;
		}
	}
	/* A miss (or no config, which cannot happen for an array: never
	 * skip): the walk. Its context is zeroed there, not on the hit path. */
	struct walk_ctx w;
	walk(&w);
	/* Kept only when the walk's deepest level is the cgroup id read
	 * before it: a task moved meanwhile (a host tool writing
	 * cgroup.procs) walked levels of both cgroups, an answer for
	 * neither. It is this call's answer, not one to keep under id. */
	if (cfg && w.last == id) {
		w.n.generation = gen;
		w.n.cgid_lo = (__u32)id;
		bpf_map_update_elem(&resolve_cache, &id, &w.n, BPF_ANY);
		keep_answer(gen, id, w.n.found, &w.n.e);
	}
	__builtin_memcpy(e, &w.n.e, sizeof(*e));
	return w.n.found;
}

/*
 * resolve fills *e for the current task and returns whether any ancestor
 * is registered and active (enforced or audited): one of this CPU's two
 * answers (resolve_recent: slot 0, then slot 1) when it is for the task's
 * cgroup under the current generation, else resolve_slow (the per-cgroup
 * cache, then the walk). Every hook calls it once. Inlined: slot 0's
 * answer costs two inlined array lookups, the cgroup id's loads and a few
 * compares (and the copy of *e for an enforced task), without a call;
 * slot 1's a load and a compare more;
 * resolve_cache's hit one call and one hash lookup more; a miss the walk.
 *
 * *e need not be initialised: resolve writes all of it when it returns 1,
 * and e->pending when it returns 0 (the rest is zero on the slow path, and
 * undefined after this CPU's answers: a caller that reads more than
 * pending after 0 must zero e itself). A hook that returns on 0 declares e
 * without zeroing its 112 bytes, which every unenforced process would pay
 * on every call.
 *
 * resolve_for below is resolve with slot_hit's bits; resolve is it with 0.
 */
static __always_inline int resolve_for(struct effective *e, __u32 bits);

static __always_inline int resolve(struct effective *e)
{
	return resolve_for(e, 0);
}

/*
 * resolve_for: resolve(), for a caller every one of whose rules is a
 * verdict on the deny bits in bits (nonzero) and nothing else: 1 (*e
 * written) when an ancestor is registered and its ceiling denies or
 * audits one of bits; 0 otherwise, *e then undefined (pending included).
 * An answer of this CPU's that denies none of bits is 0 without the copy
 * of *e (a registered process whose ceiling allows what the hook decides
 * pays what an unregistered one pays); the slow path's answer is filtered
 * the same way. Not for a rule that reads anything beyond e's deny bits
 * (the task's write mark, pending): those call resolve().
 */
static __always_inline int resolve_for(struct effective *e, __u32 bits)
{
	__u32 zero = 0;
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	struct resolve_recent *r = bpf_map_lookup_elem(&resolve_recent, &zero);
	if (cfg && r) {
		__u64 gen = cfg->generation;
		__u64 id = current_cgroup_id();
		int h = slot_hit(&r->slot[0], gen, id, e, bits);
		if (h >= 0)
			return h;
		h = slot_hit(&r->slot[1], gen, id, e, bits);
		if (h >= 0)
			return h;
	}
	/* resolve_slow is a global function: the verifier wants its
	 * argument's memory initialised. */
	__builtin_memset(e, 0, sizeof(*e));
	int found = resolve_slow(e);
	if (found && bits && !((e->deny | e->audit) & bits))
		return 0; /* as slot_hit filters this CPU's answers */
	return found;
}


/* What this CPU's answers say of the current task, without a copy
 * (this_cpu_answer): ANSWER_UNKNOWN, no whole answer for its cgroup under
 * the current generation, or one with a pending ancestor and none
 * registered; 0, no ancestor registered, active or pending; ANSWER_FOUND
 * with the union of the registered ancestors' deny and audit bits. */
#define ANSWER_UNKNOWN 0xffffffffU
#define ANSWER_FOUND (1U << 31)

/* slot_answer: what slot l says, whole, for cgroup id under gen. */
static __always_inline __u32 slot_answer(struct resolve_slot *l, __u64 gen, __u64 id)
{
	__u64 s = ENFORCERD_READ_ONCE(l->seq);
	if (s & 1)
		return ANSWER_UNKNOWN;
	ENFORCERD_BARRIER();
	if (ENFORCERD_READ_ONCE(l->cgid) != id || ENFORCERD_READ_ONCE(l->generation) != gen)
		return ANSWER_UNKNOWN;
	__u32 a;
	if (ENFORCERD_READ_ONCE(l->found))
		a = ANSWER_FOUND | ENFORCERD_READ_ONCE(l->e.deny) | ENFORCERD_READ_ONCE(l->e.audit);
	else
		a = ENFORCERD_READ_ONCE(l->e.pending) ? ANSWER_UNKNOWN : 0;
	ENFORCERD_BARRIER();
	if (ENFORCERD_READ_ONCE(l->seq) != s)
		return ANSWER_UNKNOWN;
	return a;
}

/*
 * this_cpu_answer: what one of this CPU's two answers (resolve_recent)
 * says of the current task's cgroup under the current generation, without
 * copying it (ANSWER_UNKNOWN, 0 or ANSWER_FOUND | bits, above).
 * ANSWER_UNKNOWN when neither can say (other cgroups, a registration
 * since, a writer on this CPU): the caller then decides the long way,
 * resolve() included. An answer is a shortcut only: a hook may return at
 * once on 0 when every rule of its returns 0 where resolve() does
 * (surely_unenforced), and on answer_allows(a, bits) when every rule of
 * its is a verdict on bits alone (resolve_for's callers).
 */
static __always_inline __u32 this_cpu_answer(void)
{
	__u32 zero = 0;
	struct enforcerd_config *cfg = bpf_map_lookup_elem(&enforcerd_config, &zero);
	struct resolve_recent *r = bpf_map_lookup_elem(&resolve_recent, &zero);
	if (!cfg || !r)
		return ANSWER_UNKNOWN;
	__u64 gen = cfg->generation;
	__u64 id = current_cgroup_id();
	__u32 a = slot_answer(&r->slot[0], gen, id);
	if (a != ANSWER_UNKNOWN)
		return a;
	return slot_answer(&r->slot[1], gen, id);
}

/* answer_allows: answer a (this_cpu_answer) says that no registered
 * ancestor denies or audits any of bits (none registered included). */
static __always_inline bool answer_allows(__u32 a, __u32 bits)
{
	return a != ANSWER_UNKNOWN && !(a & bits);
}

/*
 * surely_unenforced: one of this CPU's two answers says no ancestor of
 * the current task's cgroup is registered, active or pending: what
 * resolve() would answer with 0 and pending 0, without copying anything.
 * For a hook whose every rule returns 0 when resolve() does: it may return
 * at once.
 */
static __always_inline bool surely_unenforced(void)
{
	return this_cpu_answer() == 0;
}

/* verdict for one deny bit: 0 allow, DECISION_DENIED, DECISION_AUDITED. */
enum decision {
	DECISION_DENIED = 1,
	DECISION_AUDITED = 2,
};

static __always_inline int verdict(const struct effective *e, __u32 bit)
{
	if (e->deny & bit)
		return DECISION_DENIED;
	if (e->audit & bit)
		return DECISION_AUDITED;
	return 0;
}

/* What a hook returns for a verdict: -EPERM when denied, else 0. Each
 * constant is materialised by its own asm statement so clang cannot fold the
 * choice into -(decision & 1): the 6.12 verifier does not track BPF_NEG and
 * would reject the program's return value as unbounded. */
static __always_inline int verdict_ret(int decision)
{
	int r;
	if (decision == DECISION_DENIED)
		asm volatile("%0 = -1" : "=r"(r)); /* -EPERM */
	else
		asm volatile("%0 = 0" : "=r"(r));
	return r;
}

/*
 * cgroup_in_subtree reports whether cg is the cgroup with id `id` at `level`
 * or one of its descendants (cg->ancestors[level] is that cgroup). Fail
 * direction: anything unreadable is outside.
 */
static __always_inline bool cgroup_in_subtree(struct cgroup *cg, int level,
					      __u64 id)
{
	if (!cg || level < 0 || level >= MAX_CGROUP_LEVEL)
		return false;
	int cl = BPF_CORE_READ(cg, level);
	if (cl < level)
		return false;
	struct cgroup *anc = NULL;
	bpf_probe_read_kernel(&anc, sizeof(anc), &cg->ancestors[level]);
	if (!anc)
		return false;
	return BPF_CORE_READ(anc, kn, id) == id;
}

#endif /* ENFORCERD_WALK_H */
