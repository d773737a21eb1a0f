/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The state of a bpf_loop() callback, made unknown to the verifier.
 *
 * Verifiers before Linux 6.8 (6.1 among the kernels enforcerd supports)
 * check a bpf_loop() callback for one iteration only, starting from the
 * caller's state before the loop, and go on after the loop with the state
 * of that one iteration. A field the verifier knows to be 0 there (a
 * counter, a flag set by an earlier level) makes every branch that needs
 * two or more iterations dead code to it, and a dead branch is removed
 * from the program or hard-wired: the code that runs is not the code that
 * was written. Met three times on 6.1: more than MAX_ROOT_CEILINGS
 * ancestors with writable roots did not deny every write (the overflow
 * branch was dead, and the fifth ancestor's id was written past the
 * list), the count behind SEEN_SHELL_ONE never reached one, and the
 * crypto name scanner (tamper.bpf.c) never recorded a name.
 *
 * The rule: every field a callback both reads and writes, or writes for
 * the caller to read after the loop, is zeroed by a failed
 * bpf_probe_read_kernel() (which fills its buffer with zeros and leaves the
 * verifier nothing it knows), right before the loop; a field that must
 * start at another value is computed from that zero. The inputs a callback
 * only reads may stay known. bpf/loop_test.go checks that every
 * bpf_loop() call in these sources has one of the two macros before it in
 * its function. Cost: one helper call that fails at once (about 30
 * instructions) per loop.
 */
#ifndef ENFORCERD_LOOP_H
#define ENFORCERD_LOOP_H

/* LOOP_CTX_UNKNOWN(s): all of the struct s (a variable, not a pointer). */
#define LOOP_CTX_UNKNOWN(s) bpf_probe_read_kernel(&(s), sizeof(s), NULL)

/* LOOP_STATE_UNKNOWN(s, first, last): the fields of struct s from first
 * to last, both included, and whatever lies between them. */
#define LOOP_STATE_UNKNOWN(s, first, last)                                                \
	bpf_probe_read_kernel(&(s).first,                                                 \
			      __builtin_offsetof(typeof(s), last) + sizeof((s).last) -    \
				      __builtin_offsetof(typeof(s), first),               \
			      NULL)

#endif /* ENFORCERD_LOOP_H */
