package escapetest

// Int80 makes the i386 system call trap with up to three arguments through
// the int $0x80 gate. From a 64-bit process the kernel runs the compat
// (32-bit) system call table, e.g. compat_sys_ioctl. Pointers must be below
// 4 GiB (mmap with MAP_32BIT). Returns the raw result (-errno on failure).
func Int80(trap, a1, a2, a3 uintptr) int32 {
	return int32(int80(trap, a1, a2, a3))
}

func int80(trap, a1, a2, a3 uintptr) uintptr
