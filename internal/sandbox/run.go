package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/fallback"
)

// Run starts c directly inside the sandbox's cgroup (clone3
// CLONE_INTO_CGROUP: the child never runs an instruction outside it),
// forwards to it every signal in forward that this process receives while
// it runs, and waits for it. c's own SysProcAttr, if any, is kept; Run
// sets its cgroup fields.
//
// Errors: ErrNotRegistered before a successful Register (nothing is
// started: never a command without its ceiling); the cgroup directory
// cannot be opened, wrapping enforcer.ErrCannotEnforce (nothing started);
// c.Start's error as is (the command was not started: not found, not
// executable, exec refused); c.Wait's error (c.ProcessState says how it
// ended). c.ProcessState is nil exactly when nothing was started.
func (s *Sandbox) Run(c *exec.Cmd, forward ...os.Signal) error {
	if !s.registered || s.closed {
		return ErrNotRegistered
	}
	if s.spec != nil {
		// The process layer: the helper restricts itself, then execs c's
		// program (inside the cgroup, like c would have run).
		if err := fallback.Wrap(c, s.cfg.Helper, *s.spec); err != nil {
			return fmt.Errorf("%w: %v", enforcer.ErrCannotEnforce, err)
		}
	}
	dir, err := s.cg.OpenDir()
	if err != nil {
		return fmt.Errorf("%w: %v", enforcer.ErrCannotEnforce, err)
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
	if err != nil {
		return err
	}
	go func() {
		for sig := range sigs {
			_ = c.Process.Signal(sig)
		}
	}()
	return c.Wait()
}
