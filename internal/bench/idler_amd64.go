package bench

// idlerClone is in idler_amd64.s.
//
//go:noescape
func idlerClone(args *cloneArgs, size uintptr, slot *idlerSlot) (pid int64)

const idlersSupported = true
