package enforcer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/bpf"
)

// Installation is what enforcerd keeps in the kernel under one pin
// directory, read from the pins without loading or attaching anything.
type Installation struct {
	// PinDir is the directory read; Present is false when it does not
	// exist (nothing is installed there).
	PinDir  string
	Present bool
	// Registrations are the entries of the pinned ceiling map, by cgroup
	// id (nil when the map is not pinned).
	Registrations []Registration
	// HostPolicy is what a daemon recorded (HostPolicyRecorded false:
	// none ever did).
	HostPolicy         HostPolicy
	HostPolicyRecorded bool
	// LinkIDs are the kernel ids of the pinned links (the attached
	// programs), for checking that they are gone after removal.
	LinkIDs []link.ID
	// Pins counts the files under PinDir.
	Pins int
}

// ReadInstallation reads the installation under pinDir. Errors: the pin
// directory or a pin exists but cannot be read (a missing directory is
// not an error: Present is false).
func ReadInstallation(pinDir string) (Installation, error) {
	in := Installation{PinDir: pinDir}
	if _, err := os.Stat(pinDir); errors.Is(err, os.ErrNotExist) {
		return in, nil
	} else if err != nil {
		return in, fmt.Errorf("pin dir %s: %w", pinDir, err)
	}
	in.Present = true
	err := filepath.WalkDir(pinDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			in.Pins++
		}
		return nil
	})
	if err != nil {
		return in, fmt.Errorf("pin dir %s: %w", pinDir, err)
	}
	m, err := ebpf.LoadPinnedMap(MapPinPath(pinDir, bpf.SharedMapCeilings), &ebpf.LoadPinOptions{ReadOnly: true})
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return in, fmt.Errorf("ceiling map: %w", err)
	default:
		var (
			id uint64
			v  bpf.SharedCeiling
		)
		it := m.Iterate()
		for it.Next(&id, &v) {
			in.Registrations = append(in.Registrations, Registration{CgroupID: id, Entry: decode(v)})
		}
		err := it.Err()
		m.Close()
		if err != nil {
			return in, fmt.Errorf("ceiling map: %w", err)
		}
		sort.Slice(in.Registrations, func(i, j int) bool { return in.Registrations[i].CgroupID < in.Registrations[j].CgroupID })
	}
	if in.HostPolicy, in.HostPolicyRecorded, err = readHostPolicy(filepath.Join(pinDir, HostPolicyPin)); err != nil {
		return in, err
	}
	ents, err := os.ReadDir(LinkPinDir(pinDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return in, fmt.Errorf("link pins: %w", err)
	}
	for _, de := range ents {
		l, err := link.LoadPinnedLink(filepath.Join(LinkPinDir(pinDir), de.Name()), nil)
		if err != nil {
			return in, fmt.Errorf("link pin %s: %w", de.Name(), err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			return in, fmt.Errorf("link pin %s: %w", de.Name(), err)
		}
		in.LinkIDs = append(in.LinkIDs, info.ID)
	}
	return in, nil
}

// RemovePins removes every pin under the installation's pin directory and
// the directory, then waits up to wait for each of its links to be
// released by the kernel (detached: every ceiling lifted). Errors: a pin
// cannot be removed; a link is still attached after wait (a process holds
// a file descriptor of it, e.g. a running daemon or `enforcerd run`).
func (in Installation) RemovePins(wait time.Duration) error {
	if err := os.RemoveAll(in.PinDir); err != nil {
		return fmt.Errorf("remove pins %s: %w", in.PinDir, err)
	}
	deadline := time.Now().Add(wait)
	for _, id := range in.LinkIDs {
		for {
			l, err := link.NewFromID(id)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				l.Close()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("link id %d still attached %v after its pin was removed: a process holds it (bpftool link show id %d; stop every enforcerd daemon and run)", id, wait, id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
