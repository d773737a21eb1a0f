package sandbox

import (
	"errors"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
)

// Registrar installs and removes the registration of a sandbox's cgroup.
// The default (without SetRegistrar) writes the entry into the pinned maps
// of the sandbox's own enforcer; another one hands it to whoever owns the
// registrations of these pins (an enforcerd daemon).
type Registrar interface {
	// Register installs entry for cg. Errors: it is not installed.
	Register(cg cgroup.Cgroup, en entry.Entry) error
	// Unregister removes cg's registration (called after every process
	// of cg was killed). Errors: it may still be installed.
	Unregister(cg cgroup.Cgroup) error
}

// InitRegistrar is a Registrar whose registration names the process that
// will exec the command (a daemon's pending registration with its
// init_pid, activated at that process's first exec). With one, Register
// prepares the cgroup but leaves the registration to Run, which starts
// the exec gate (gate.go) inside the cgroup, calls RegisterInit with its
// pid and releases it only when that succeeded. Register of an
// InitRegistrar is not called by the sandbox.
type InitRegistrar interface {
	Registrar
	// RegisterInit installs entry for cg, pending until the first exec
	// of initPID (the only process in cg). Errors: it is not installed
	// (the sandbox then kills initPID, which never execs).
	RegisterInit(cg cgroup.Cgroup, en entry.Entry, initPID int) error
}

// pinRegistrar is the default Registrar: the pinned maps, directly.
type pinRegistrar struct{ enf *enforcer.Enforcer }

func (p pinRegistrar) Register(cg cgroup.Cgroup, e entry.Entry) error {
	return p.enf.Register(cg, e)
}
func (p pinRegistrar) Unregister(cg cgroup.Cgroup) error { return p.enf.Unregister(cg.ID) }

// SetRegistrar makes r install and remove the sandbox's registration
// instead of the pinned maps directly. Call it between Open and Register.
// Errors (the sandbox keeps the direct path): called after Register; r is
// an InitRegistrar but the command restricts itself through the process
// layer (its exec is the helper's, and the entry's process layer is the
// sandbox's to credit), or this host cannot activate a registration at
// exec (no lifecycle program: a pending registration would never
// become active).
func (s *Sandbox) SetRegistrar(r Registrar) error {
	if s.created || s.closed {
		return errors.New("sandbox: SetRegistrar after Register or Close")
	}
	if _, ok := r.(InitRegistrar); ok {
		if s.spec != nil {
			return errors.New("the process layer is applied by this process: the registration stays direct")
		}
		if !s.enf.CanActivateAtExec() {
			return errors.New("this host cannot activate a registration at exec: the registration stays direct")
		}
	}
	s.reg = r
	return nil
}
