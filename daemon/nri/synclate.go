package nri

import (
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

// registerLateFallback registers a running container Synchronize could
// not register as its annotations ask (req failed with Register): it
// cannot be refused any more, and leaving it wholly unconfined would let
// a pod's author turn the plugin's absence into a permanent escape from
// every field by making the exact registration fail (shell=none over a
// running shell, a missing allow-connect socket, write root or device
// node, a shell
// layer the host lacks). Tried in order, the first Register that
// succeeds wins: req without its allow-connect endpoints, write roots
// and allowed devices (holes: dropping them only narrows), then that with the ceiling's shell
// set to read_only, then to full. Network, write, tools and depth stay
// the request's (a shell never widens them). widened says the shell is
// wider than the request's (the caller freezes the container); ok is
// false when none registers.
func (p *Plugin) registerLateFallback(req registry.Request) (c state.Container, widened bool, ok bool) {
	req.AllowConnect, req.WriteRoots, req.AllowDevices = nil, nil, nil
	ceiling, err := policy.ParseCeiling(req.Ceiling, policy.DefaultSession())
	if err != nil {
		return c, false, false
	}
	for _, s := range []policy.Shell{"", policy.ShellReadOnly, policy.ShellFull} {
		try := req
		if s != "" {
			set := ceiling
			set.Shell = s
			try.Ceiling = set.String()
		}
		if c, err = p.o.Registry.Register(try); err == nil {
			return c, s != "" && s != ceiling.Shell, true
		}
	}
	return c, false, false
}
