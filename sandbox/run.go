package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/sandbox/fallback"
)

// Run starts c directly inside the sandbox's cgroup (clone3
// CLONE_INTO_CGROUP: the child never runs an instruction outside it),
// forwards to it every signal in forward that this process receives while
// it runs, and waits for it. c's own SysProcAttr, if any, is kept; Run
// sets its cgroup fields.
//
// With an InitRegistrar (SetRegistrar) c starts as the exec gate
// (gate.go, the enforcerd binary at /proc/self/exe): the registration is
// installed naming the gate's pid as the init, and only then is the gate
// released to exec c's program, the exec that activates the pending
// registration. When the registration fails the gate is killed and never
// execs: the error wraps coverage.ErrCannotEnforce, and c.ProcessState is
// set (the gate's end) although c's program never ran. An exec failure of
// the released gate is its exit status: 127 not found, 126 not
// executable (GateNotFound, GateNotExecutable).
//
// Errors: ErrNotRegistered before a successful Register (nothing is
// started: never a command without its ceiling); the cgroup directory
// cannot be opened, wrapping coverage.ErrCannotEnforce (nothing started);
// the exec gate could not be started or the deferred registration
// failed, wrapping coverage.ErrCannotEnforce (c's program never ran);
// otherwise c.Start's error as is (the command was not started: not
// found, not executable, exec refused); c.Wait's error
// (c.ProcessState says how it ended). Without an InitRegistrar
// c.ProcessState is nil exactly when nothing was started; check
// errors.Is(err, coverage.ErrCannotEnforce) first.
func (s *Sandbox) Run(c *exec.Cmd, forward ...os.Signal) error {
	if !(s.registered || s.deferred) || s.closed {
		return ErrNotRegistered
	}
	var g *gate
	if s.deferred {
		var err error
		if g, err = wrapGate(c, "/proc/self/exe"); err != nil {
			return fmt.Errorf("%w: %v", coverage.ErrCannotEnforce, err)
		}
		defer g.abort() // no-op after release
	}
	if s.spec != nil {
		// The process layer: the helper restricts itself, then execs c's
		// program (inside the cgroup, like c would have run).
		if err := fallback.Wrap(c, s.cfg.Helper, *s.spec); err != nil {
			return fmt.Errorf("%w: %v", coverage.ErrCannotEnforce, err)
		}
	}
	dir, err := s.cg.OpenDir()
	if err != nil {
		return fmt.Errorf("%w: %v", coverage.ErrCannotEnforce, err)
	}
	attr := cgroup.SysProcAttr(dir)
	if c.SysProcAttr != nil {
		a := *c.SysProcAttr
		a.UseCgroupFD, a.CgroupFD = attr.UseCgroupFD, attr.CgroupFD
		attr = &a
	}
	c.SysProcAttr = attr
	// Subscribed before the start: a signal that arrives in between is
	// delivered once the command runs.
	sigs := make(chan os.Signal, 4)
	if len(forward) > 0 {
		signal.Notify(sigs, forward...)
	}
	defer func() {
		signal.Stop(sigs)
		close(sigs)
	}()
	err = c.Start()
	dir.Close()
	if g != nil {
		g.started()
		if err != nil {
			// enforcerd itself did not start: nothing of CMD's.
			s.deferred = false
			if rerr := s.restoreCore(); rerr != nil {
				err = fmt.Errorf("%w; %v", err, rerr)
			}
			return fmt.Errorf("%w: exec gate: %w", coverage.ErrCannotEnforce, err)
		}
	}
	if err != nil {
		return err
	}
	if g != nil {
		if err := s.registerInit(c, g); err != nil {
			return err
		}
	}
	go func() {
		for sig := range sigs {
			_ = c.Process.Signal(sig)
		}
	}()
	return c.Wait()
}

// registerInit installs the deferred registration naming c's process (the
// exec gate, waiting inside the cgroup) as the init, then releases the
// gate. On failure the gate is killed before it could exec and reaped,
// RLIMIT_CORE is put back, and the error wraps coverage.ErrCannotEnforce.
func (s *Sandbox) registerInit(c *exec.Cmd, g *gate) error {
	ir := s.reg.(InitRegistrar)
	err := ir.RegisterInit(s.cg, s.initEntry, c.Process.Pid)
	if err == nil {
		s.registered, s.deferred = true, false
		if err = g.release(); err == nil {
			return nil
		}
		// The gate is gone: the registration stays for Close.
	} else {
		s.deferred = false
		if rerr := s.restoreCore(); rerr != nil {
			err = fmt.Errorf("%w; %v", err, rerr)
		}
	}
	g.abort()
	_ = c.Process.Kill()
	_ = c.Wait()
	return fmt.Errorf("%w: %w", coverage.ErrCannotEnforce, err)
}
