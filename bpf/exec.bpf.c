//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * The shell ceiling at exec (README "What is enforced"), decided on the
 * file being executed (device + inode), never on its name:
 *
 *  - shell=none: only the container's entrypoint and the allow list may be
 *    executed (X1: a symlink, copy or hard link of /bin/sh is a different
 *    or unlisted inode; X2: busybox/awk/python reaching exec are checked at
 *    the same hook; a script's interpreter is checked as a second
 *    bprm_check_security, also in the exec that activates a pending
 *    registration, whose entrypoint is the file its first exec names;
 *    the dynamic loader is itself an unlisted file).
 *  - shell=read_only: exec is allowed, but every process started by exec
 *    runs write-denied (task_flags), even when the container may write.
 *  - both: no exec of memfds or other files on kernel-internal mounts
 *    (fexecve of a memfd), nor of files the sandbox wrote.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "exec.h"

char LICENSE[] SEC("license") = "GPL";

/* program_checked: the program of a restricted exec passed its checks;
 * note it on the task (TASK_EXEC_PROGRAM_CHECKED, exec.h exec_open). No
 * storage: the exec is refused (fail closed). */
static __always_inline int program_checked(struct effective *e, struct file *f,
					   struct inode *inode)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 *tf = bpf_task_storage_get(&task_flags, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tf) {
		__u32 bit = verdict(e, DENY_SHELL_WRITE) ? DENY_SHELL_WRITE : DENY_SHELL;
		if (!e->deny_cgid[bit_index(bit)])
			e->deny_cgid[bit_index(bit)] = e->sandbox_cgid;
		return exec_event(e, DECISION_DENIED, bit, f, inode, HOOK_BPRM_CHECK_SECURITY, RULE_FIELD);
	}
	*tf |= TASK_EXEC_PROGRAM_CHECKED;
	return 0;
}

/* X1/X2 and memfd/fexecve: every exec, every binfmt stage (a script, then
 * its interpreter). */
SEC("lsm/bprm_check_security")
int BPF_PROG(bprm_check_security, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	/* Direct (BTF) dereferences: bpf_inode_storage_get needs a typed
	 * inode pointer, not a probe-read scalar. */
	struct file *f = bprm->file;
	if (!f)
		return -EPERM; /* fail closed: nothing to identify */
	struct inode *inode = f->f_inode;
	if (!inode)
		return -EPERM;
	struct effective e = {};
	int found = resolve(&e);
	/* A registration is pending: the entrypoint's exec (pending_verdict).
	 * Only the file the exec names is the entrypoint; a later binfmt
	 * stage (bprm->interp no longer is bprm->filename) must be allowed.
	 * The (cached) walk says whether any registration is pending at all. */
	int stage = bprm->interp == bprm->filename ? PENDING_EXEC_FIRST : PENDING_EXEC;
	int r = exec_file_verdict(&e, found, f, inode, stage, HOOK_BPRM_CHECK_SECURITY, RULE_FIELD);
	if (r)
		return r;
	/* X5, shell=read_only: the process this exec starts runs write-denied
	 * (bprm_committed_creds sets the flag); and under both restricted
	 * shells, the opens for exec that follow are this program's
	 * interpreters (exec.h exec_open). The storage is created here, where
	 * the exec can still be refused: no storage, no exec. */
	if (e.pending || (found && (verdict(&e, DENY_SHELL) || verdict(&e, DENY_SHELL_WRITE))))
		return program_checked(&e, f, inode);
	return 0;
}

/* shell=read_only: the process now running the new program is write-denied
 * (file.bpf.c consults task_flags). Runs before sched_process_exec, so the
 * entrypoint exec of a pending registration is not marked. */
SEC("lsm/bprm_committed_creds")
int BPF_PROG(bprm_committed_creds, struct linux_binprm *bprm)
{
	/* The exec is done: no more interpreters of it (exec_open). */
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 *f = bpf_task_storage_get(&task_flags, t, 0, 0);
	if (f)
		*f &= ~TASK_EXEC_PROGRAM_CHECKED;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	int ro = verdict(&e, DENY_SHELL_WRITE);
	if (!ro)
		return 0;
	/* Created by bprm_check_security of this exec (which refuses the
	 * exec when it cannot be); bprm_committed_creds cannot refuse. */
	if (!f)
		f = bpf_task_storage_get(&task_flags, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (f)
		*f |= ro == DECISION_DENIED ? TASK_EXEC_WRITE_DENIED : TASK_EXEC_WRITE_AUDITED;
	return 0;
}

/* Children and threads inherit the write denial of their creator. */
SEC("lsm/task_alloc")
int BPF_PROG(task_alloc, struct task_struct *task, unsigned long clone_flags,
	     int ret)
{
	if (ret)
		return ret;
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 *f = bpf_task_storage_get(&task_flags, cur, 0, 0);
	if (!f || !(*f & TASK_EXEC_INHERITED))
		return 0;
	__u32 v = *f & TASK_EXEC_INHERITED;
	__u32 *nf = bpf_task_storage_get(&task_flags, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!nf)
		return -ENOMEM; /* fail closed: the child would lose its denial */
	*nf = v;
	return 0;
}

