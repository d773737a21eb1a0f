// The idler: a background process of the scale figure (scale.go), written
// so that it needs no Go runtime and no memory of its own. It shares the
// driver's address space (CLONE_VM), fd table and signal handlers, never
// touches its stack, and only ever reads and writes its own idlerSlot.

#include "textflag.h"

// Offsets in idlerSlot (scale.go; TestIdlerSlotLayout checks them).
#define SLOT_NEXT 0
#define SLOT_PERIOD 8
#define SLOT_TS 16
#define SLOT_COUNT 32
#define SLOT_FAILS 40
#define SLOT_PPID 48
#define SLOT_MASK 56

// func idlerClone(args *cloneArgs, size uintptr, slot *idlerSlot) (pid int64)
//
// clone3(args, size). The parent returns the child's pid (or -errno). The
// child blocks every signal (SIGKILL still kills it), asks for SIGKILL when
// its parent thread exits (PR_SET_PDEATHSIG), exits at once when its
// parent is already gone, and then loops forever: sleep until slot.next
// (CLOCK_MONOTONIC, absolute), socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC)
// and close (slot.count += 1; slot.fails += 1 when socket fails),
// slot.next += slot.period.
TEXT ·idlerClone(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ args+0(FP), DI
	MOVQ size+8(FP), SI
	MOVQ slot+16(FP), R12
	MOVQ $435, AX            // SYS_clone3
	SYSCALL
	CMPQ AX, $0
	JEQ  child
	MOVQ AX, pid+24(FP)
	RET

child:
	MOVQ $2, DI              // SIG_SETMASK
	LEAQ SLOT_MASK(R12), SI
	XORQ DX, DX
	MOVQ $8, R10
	MOVQ $14, AX             // SYS_rt_sigprocmask
	SYSCALL
	MOVQ $1, DI              // PR_SET_PDEATHSIG
	MOVQ $9, SI              // SIGKILL
	MOVQ $157, AX            // SYS_prctl
	SYSCALL
	MOVQ $110, AX            // SYS_getppid
	SYSCALL
	CMPQ AX, SLOT_PPID(R12)
	JNE  exit

loop:
	MOVQ SLOT_NEXT(R12), AX
	XORQ DX, DX
	MOVQ $1000000000, CX
	DIVQ CX                  // AX = seconds, DX = nanoseconds
	MOVQ AX, SLOT_TS(R12)
	MOVQ DX, (SLOT_TS+8)(R12)
	MOVQ $1, DI              // CLOCK_MONOTONIC
	MOVQ $1, SI              // TIMER_ABSTIME
	LEAQ SLOT_TS(R12), DX
	XORQ R10, R10
	MOVQ $230, AX            // SYS_clock_nanosleep
	SYSCALL
	MOVQ $2, DI              // AF_INET
	MOVQ $0x80001, SI        // SOCK_STREAM|SOCK_CLOEXEC
	XORQ DX, DX
	MOVQ $41, AX             // SYS_socket
	SYSCALL
	CMPQ AX, $0
	JLT  failed
	MOVQ AX, DI
	MOVQ $3, AX              // SYS_close
	SYSCALL
	INCQ SLOT_COUNT(R12)
	JMP  advance

failed:
	INCQ SLOT_FAILS(R12)

advance:
	MOVQ SLOT_PERIOD(R12), AX
	ADDQ AX, SLOT_NEXT(R12)
	JMP  loop

exit:
	XORQ DI, DI
	MOVQ $60, AX             // SYS_exit
	SYSCALL
	JMP  exit
