// vforkExit: process creation as posix_spawn(3) and Go's os/exec do it,
// with nothing run in the child. Written in assembly because the child
// shares the parent's memory, stack included (CLONE_VM), so it must not
// touch memory at all: it uses registers only.

#include "textflag.h"

// func vforkExit() (pid int64)
//
// clone(CLONE_VM|CLONE_VFORK|SIGCHLD, 0, 0, 0, 0). The child calls
// exit_group(0) at once. The parent, held by CLONE_VFORK until the child
// has exited, returns the child's pid (or -errno).
//
// Signals stay unblocked (posix_spawn blocks them around the clone; that
// would add two system calls to every operation). The child keeps the
// parent's handlers and alternate signal stack, so a signal delivered to
// it before exit_group would run Go's handler on the parent's stack. Only
// a signal sent to the child's pid or process group can: the Go runtime
// signals its own threads by thread id, and nothing in the benchmark
// guest signals a process group.
TEXT ·vforkExit(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ $0x4111, DI         // CLONE_VM|CLONE_VFORK|SIGCHLD
	XORQ SI, SI              // the same stack: the child never uses it
	XORQ DX, DX
	XORQ R10, R10
	XORQ R8, R8
	MOVQ $56, AX             // SYS_clone
	SYSCALL
	CMPQ AX, $0
	JEQ  child
	MOVQ AX, pid+0(FP)
	RET

child:
	XORQ DI, DI
	MOVQ $231, AX            // SYS_exit_group
	SYSCALL
	JMP  child
