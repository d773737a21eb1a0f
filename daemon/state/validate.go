package state

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Bounds of the lists a Container holds. The daemon writes at most
// MaxListLen allow-connect endpoints, write roots and exec-allow files
// (the API's limit of 16, met with nested registrations, which only
// shrinks them); interpreters and coverage gaps are few. A file with
// longer lists was not written by this daemon.
const (
	MaxListLen    = 16
	maxInterps    = 256
	maxGaps       = 64
	maxTextBytes  = 4096
	maxProxyAllow = 1024
)

// validate checks every field of the containers of a file Load read; the
// error names the container and the field. Load wraps it in ErrCorrupt:
// the daemon refuses to start on a file it cannot trust (fail closed),
// rather than enforce a value nobody registered.
func validate(cs []Container) error {
	ids := map[string]bool{}
	cgroupIDs := map[uint64]string{}
	for i, c := range cs {
		if !oci.ValidID(c.ID) {
			return fmt.Errorf("container %d: id %q is empty or not a container id", i, c.ID)
		}
		if ids[c.ID] {
			return fmt.Errorf("container %s: id given twice", c.ID)
		}
		ids[c.ID] = true
		if c.CgroupID == 0 {
			return fmt.Errorf("container %s: cgroup_id 0", c.ID)
		}
		if other, ok := cgroupIDs[c.CgroupID]; ok {
			return fmt.Errorf("container %s: cgroup_id %d is also container %s's", c.ID, c.CgroupID, other)
		}
		cgroupIDs[c.CgroupID] = c.ID
		if err := validateContainer(c); err != nil {
			return fmt.Errorf("container %s: %w", c.ID, err)
		}
	}
	return nil
}

// validateContainer checks the fields of one container but its id and
// cgroup id.
func validateContainer(c Container) error {
	for _, f := range []func(Container) error{validateNames, validateCeilings, validateLifecycle, validateLists} {
		if err := f(c); err != nil {
			return err
		}
	}
	return nil
}

// validateNames: the cgroup path, the parent, the texts.
func validateNames(c Container) error {
	if !path.IsAbs(c.Cgroup) || path.Clean(c.Cgroup) != c.Cgroup || c.Cgroup == "/" || !oneLine(c.Cgroup) {
		return fmt.Errorf("cgroup %q is not a clean absolute group path below the root", c.Cgroup)
	}
	if c.Parent != "" && (!oci.ValidID(c.Parent) || c.Parent == c.ID) {
		return fmt.Errorf("parent %q is not another container's id", c.Parent)
	}
	for name, v := range map[string]string{"role": c.Role, "tool_groups": c.ToolGroups, "fingerprint": c.Fingerprint, "activation_reason": c.ActivationReason} {
		if len(v) > maxTextBytes || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%s: longer than %d bytes or holds NUL", name, maxTextBytes)
		}
	}
	if !oneLine(c.Role) {
		return fmt.Errorf("role %q is not one line", c.Role)
	}
	if c.Fingerprint == "" {
		return fmt.Errorf("fingerprint: empty")
	}
	return nil
}

// validateCeilings: every shell value is in the vocabulary and the
// effective ceiling is within its session.
func validateCeilings(c Container) error {
	for name, s := range map[string]policy.Shell{"session.shell": c.Session.Shell, "ceiling.shell": c.Ceiling.Shell, "kernel.shell": c.Kernel.Shell} {
		if !s.Valid() {
			return fmt.Errorf("%s %q: want one of %v", name, s, policy.AllShells)
		}
	}
	if !c.Ceiling.Within(c.Session) {
		return fmt.Errorf("ceiling %s is wider than its session %s", c.Ceiling, c.Session)
	}
	return nil
}

// validateLifecycle: activation, state, pids and timestamps agree.
func validateLifecycle(c Container) error {
	switch c.Activation {
	case "", ActivationImmediate, ActivationAtExec:
	default:
		return fmt.Errorf("activation %q: want %s or %s", c.Activation, ActivationImmediate, ActivationAtExec)
	}
	switch c.State {
	case "", StateActive, StateFrozen, StateKilled:
		if c.PendingDeadline != nil {
			return fmt.Errorf("state %q with a pending_deadline (only a pending registration has one)", c.State)
		}
	case StatePending:
		// Without a deadline nothing would ever freeze it.
		if c.PendingDeadline == nil || c.PendingDeadline.IsZero() {
			return fmt.Errorf("state %q without a pending_deadline", c.State)
		}
		if !c.Registered.IsZero() && c.PendingDeadline.Before(c.Registered) {
			return fmt.Errorf("pending_deadline %s is before registered %s", c.PendingDeadline.Format(time.RFC3339Nano), c.Registered.Format(time.RFC3339Nano))
		}
	default:
		return fmt.Errorf("state %q: want one of %s, %s, %s, %s", c.State, StatePending, StateActive, StateFrozen, StateKilled)
	}
	if c.InitPID < 0 || (c.InitPID == 0) != (c.InitStart == 0) {
		return fmt.Errorf("init_pid %d, init_start %d: want both or neither", c.InitPID, c.InitStart)
	}
	return nil
}

// validateLists: lengths, paths, endpoints, identities.
func validateLists(c Container) error {
	if c.ProxyAllow != nil && len(*c.ProxyAllow) > maxProxyAllow {
		return fmt.Errorf("proxy_allow: %d domains, at most %d", len(*c.ProxyAllow), maxProxyAllow)
	}
	if len(c.Unenforced) > maxGaps {
		return fmt.Errorf("unenforced: %d gaps, at most %d", len(c.Unenforced), maxGaps)
	}
	if c.Entrypoint != nil {
		if err := c.Entrypoint.Validate(); err != nil {
			return fmt.Errorf("entrypoint: %w", err)
		}
	}
	if len(c.AllowConnect) > MaxListLen {
		return fmt.Errorf("allow_connect: %d endpoints, at most %d", len(c.AllowConnect), MaxListLen)
	}
	for _, e := range c.AllowConnect {
		if _, err := endpoint.Parse(e.String()); err != nil {
			return fmt.Errorf("allow_connect: %w", err)
		}
	}
	if len(c.WriteRoots) > policy.MaxWriteRoots {
		return fmt.Errorf("write_roots: %d, at most %d", len(c.WriteRoots), policy.MaxWriteRoots)
	}
	for _, w := range c.WriteRoots {
		if err := validateFile("write_roots", w.Path, w.Ino); err != nil {
			return err
		}
	}
	if err := validateDevices(c); err != nil {
		return err
	}
	if c.SetupProgram != nil {
		if err := validateFile("setup_program", c.SetupProgram.Path, c.SetupProgram.Ino); err != nil {
			return err
		}
	}
	for name, l := range map[string]struct {
		files []ExecFile
		max   int
	}{"exec_allow": {c.ExecAllow, MaxListLen}, "exec_interp": {c.ExecInterp, maxInterps}} {
		if len(l.files) > l.max {
			return fmt.Errorf("%s: %d files, at most %d", name, len(l.files), l.max)
		}
		for _, f := range l.files {
			if err := validateFile(name, f.Path, f.Ino); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateFile: a clean absolute path and an inode number.
func validateFile(list, p string, ino uint64) error {
	if !path.IsAbs(p) || path.Clean(p) != p || len(p) > maxTextBytes || !oneLine(p) {
		return fmt.Errorf("%s: %q is not a clean absolute path", list, p)
	}
	if ino == 0 {
		return fmt.Errorf("%s: %s: inode 0", list, p)
	}
	return nil
}

// oneLine: no NUL, no line break.
func oneLine(s string) bool { return !strings.ContainsAny(s, "\x00\n\r") }

// validateDevices: the device allow list and the own terminals within
// their bounds (devallow.Max, entry.MaxTerminals), each entry a device number
// the kernel can encode, none twice.
func validateDevices(c Container) error {
	if len(c.AllowDevices) > devallow.Max {
		return fmt.Errorf("allow_devices: %d devices, at most %d", len(c.AllowDevices), devallow.Max)
	}
	seen := map[devallow.Device]bool{}
	for _, d := range c.AllowDevices {
		if d.Major == 0 || d.Major > devallow.MaxMajor || d.Minor > devallow.MaxMinor {
			return fmt.Errorf("allow_devices: %d:%d is not a device number", d.Major, d.Minor)
		}
		k := devallow.Device{Block: d.Block, Major: d.Major, Minor: d.Minor}
		if seen[k] {
			return fmt.Errorf("allow_devices: %d:%d listed twice", d.Major, d.Minor)
		}
		seen[k] = true
	}
	if len(c.Terminals) > entry.MaxTerminals {
		return fmt.Errorf("terminals: %d, at most %d", len(c.Terminals), entry.MaxTerminals)
	}
	for _, t := range c.Terminals {
		if t.Dev>>20 == 0 {
			return fmt.Errorf("terminals: device %#x has no major number", t.Dev)
		}
	}
	return nil
}
