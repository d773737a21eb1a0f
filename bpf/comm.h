/* SPDX-License-Identifier: GPL-2.0 */
/*
 * K10: the task name (comm) is text of the sandbox's choosing that the
 * kernel copies into the host's kernel log (the segfault report of
 * show_signal_msg, the OOM killer, hung-task and lockup reports, audit
 * records). For every enforced process whatever its ceiling, no path that
 * sets a name without creating a file:
 *
 *  - prctl(PR_SET_NAME): refused at task_prctl (below);
 *  - writes to /proc/<pid>/comm and /proc/<pid>/task/<tid>/comm
 *    (comm_write, and what pthread_setname_np(3) uses for another thread):
 *    "comm" is not on the /proc/<pid> write allow list (file.bpf.c
 *    proc_pid_write_allowed), so file_permission refuses the write.
 *
 * Refused with EPERM, never silently kept: pthread_setname_np(3) returns
 * the error, and the programs that name threads (CPython's threading,
 * Chromium, libuv/node, systemd) ignore it; the name a process keeps is the
 * one exec gave it. What stays: exec sets comm from the executed file's
 * name (a known limit: under write=false only names of files that exist on
 * the host; the kernel rate-limits its segfault report, printk_ratelimit:
 * 10 messages per 5 s).
 *
 * task_prctl's default return is -ENOSYS ("no module handled the
 * option", which prctl(2) takes as "go on"). A BPF LSM program is a
 * modify-return program on bpf_lsm_task_prctl: returning 0 means "no
 * decision", and the trampoline then runs that function, whose -ENOSYS
 * lets prctl(2) go on; only a non-zero return replaces it. So 0 allows
 * here as everywhere (TestTaskName's control run and every other prctl
 * option of a sandboxed process depend on it).
 */
#ifndef ENFORCERD_COMM_H
#define ENFORCERD_COMM_H

#include "enforcerd.h"

#define PR_SET_NAME 15 /* include/uapi/linux/prctl.h */

/* comm_prctl: the verdict on prctl(option, ...): 0 to allow. */
static __always_inline int comm_prctl(int option)
{
	if (option != PR_SET_NAME)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	return tamper(&e, HOOK_TASK_PRCTL, RULE_TASK_NAME, OBJ_NONE, PR_SET_NAME);
}

#endif /* ENFORCERD_COMM_H */
