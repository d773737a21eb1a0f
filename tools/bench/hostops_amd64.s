// forkExit and cloneThreadExit: a real fork and a pthread-style thread,
// each with nothing run in the child but its exit, in assembly because the
// child runs no Go code (the thread shares the parent's memory and runs on
// a stack of its own it never touches; the forked child runs on its copy
// of the parent's). Registers only.

#include "textflag.h"

// func forkExit() (pid int64)
//
// clone(SIGCHLD, 0, 0, 0, 0): fork(2), the address space copied. The child
// calls exit_group(0) at once; the parent returns its pid (or -errno).
// Signals stay unblocked, as in vforkExit (vfork_amd64.s says why that is
// safe here).
TEXT ·forkExit(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ $17, DI             // SIGCHLD
	XORQ SI, SI              // the child runs on its copy of this stack
	XORQ DX, DX
	XORQ R10, R10
	XORQ R8, R8
	MOVQ $56, AX             // SYS_clone
	SYSCALL
	CMPQ AX, $0
	JEQ  forkchild
	MOVQ AX, pid+0(FP)
	RET

forkchild:
	XORQ DI, DI
	MOVQ $231, AX            // SYS_exit_group
	SYSCALL
	JMP  forkchild

// func cloneThreadExit(stack uintptr, tid *int32, tls uintptr) (r int64)
//
// clone(CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|
// CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID,
// stack, tid, tid, tls): glibc's pthread_create flags. The kernel stores
// the new thread's id in *tid before clone returns, and clears it (and
// wakes a futex waiter) when the thread exits. The thread calls exit(0)
// (this thread only) at once; the parent returns its tid (or -errno).
TEXT ·cloneThreadExit(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ stack+0(FP), SI
	MOVQ tid+8(FP), DX       // parent_tid
	MOVQ DX, R10             // child_tid
	MOVQ tls+16(FP), R8
	MOVQ $0x3d0f00, DI
	MOVQ $56, AX             // SYS_clone
	SYSCALL
	CMPQ AX, $0
	JEQ  threadchild
	MOVQ AX, r+24(FP)
	RET

threadchild:
	XORQ DI, DI
	MOVQ $60, AX             // SYS_exit
	SYSCALL
	JMP  threadchild
