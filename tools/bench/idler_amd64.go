package bench

// idlerClone is in idler_amd64.s.
//
//go:noescape
func idlerClone(args *cloneArgs, size uintptr, slot *idlerSlot) (pid int64)

const idlersSupported = true

// vforkExit is in vfork_amd64.s.
func vforkExit() (pid int64)

const vforkSupported = true
