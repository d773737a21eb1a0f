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
