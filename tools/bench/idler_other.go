//go:build !amd64

package bench

import "golang.org/x/sys/unix"

// idlerClone: the idler loop is written for amd64 only; elsewhere the
// scale figure refuses to run (spawnIdler reports it).
func idlerClone(args *cloneArgs, size uintptr, slot *idlerSlot) (pid int64) {
	return -int64(unix.ENOSYS)
}

const idlersSupported = false

// vforkExit: written for amd64 only; elsewhere the fork operation
// refuses to run.
func vforkExit() (pid int64) { return -int64(unix.ENOSYS) }

const vforkSupported = false

// forkExit and cloneThreadExit: written for amd64 only; elsewhere
// fork_copy and thread refuse to run.
func forkExit() (pid int64) { return -int64(unix.ENOSYS) }

func cloneThreadExit(stack uintptr, tid *int32, tls uintptr) (r int64) {
	return -int64(unix.ENOSYS)
}
