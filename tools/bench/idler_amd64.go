package bench

// idlerClone is in idler_amd64.s.
//
//go:noescape
func idlerClone(args *cloneArgs, size uintptr, slot *idlerSlot) (pid int64)

const idlersSupported = true

// vforkExit is in vfork_amd64.s.
func vforkExit() (pid int64)

const vforkSupported = true

// forkExit is in hostops_amd64.s.
func forkExit() (pid int64)

// cloneThreadExit is in hostops_amd64.s.
//
//go:noescape
func cloneThreadExit(stack uintptr, tid *int32, tls uintptr) (r int64)
