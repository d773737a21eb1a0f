package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/enforcer"
)

// attachment is one of enforcerd's attached programs, kept loaded so that it
// can be detached and re-attached without a new load (no verifier run).
type attachment struct {
	pin      string
	prog     *ebpf.Program
	cgAttach ebpf.AttachType
}

// attachSet lets the VM part alternate (a) "no programs attached" with
// (b)-(d) in every round: the programs stay loaded, their links come and go.
// Detached, no enforcerd program runs on any hook, which is what (a)
// measures; the strict (a) before the first load of the boot is kept as a
// check of that (phase a0).
type attachSet struct {
	items []attachment
	mount string
}

func captureAttachments(pin, mount string) (*attachSet, error) {
	dir := enforcer.LinkPinDir(pin)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &attachSet{mount: mount}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		l, err := link.LoadPinnedLink(p, nil)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", p, err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", p, err)
		}
		prog, err := ebpf.NewProgramFromID(info.Program)
		if err != nil {
			return nil, fmt.Errorf("program of %s: %w", p, err)
		}
		a := attachment{pin: p, prog: prog}
		if cg := info.Cgroup(); cg != nil {
			a.cgAttach = ebpf.AttachType(cg.AttachType)
		}
		s.items = append(s.items, a)
	}
	return s, nil
}

// detach removes every link pin; with no other holder (the caller closed its
// enforcer), the links are released and the programs detached. It then
// checks the kernel's link list until no link of these programs is left
// (detachTimeout): (a) must run with nothing of enforcerd attached. Errors:
// a pin that cannot be removed, links still attached after the timeout.
func (s *attachSet) detach() error {
	for _, a := range s.items {
		if err := os.Remove(a.pin); err != nil {
			return fmt.Errorf("detach %s: %w", a.pin, err)
		}
	}
	deadline := time.Now().Add(detachTimeout)
	for {
		n, err := s.attachedLinks()
		if err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("detach: %d links of enforcerd's programs still attached %v after their pins were removed (another holder?): (a) would not be \"no programs\"", n, detachTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// detachTimeout bounds how long detach waits for released links to go.
var detachTimeout = 30 * time.Second

// attachedLinks counts the kernel's links (any holder, pinned or not) whose
// program is one of s's.
func (s *attachSet) attachedLinks() (int, error) {
	ours := map[ebpf.ProgramID]bool{}
	for _, a := range s.items {
		info, err := a.prog.Info()
		if err != nil {
			return 0, fmt.Errorf("program info: %w", err)
		}
		id, ok := info.ID()
		if !ok {
			return 0, errors.New("program info: no id (kernel too old)")
		}
		ours[id] = true
	}
	n := 0
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, fmt.Errorf("link %d info: %w", it.ID, err)
		}
		if ours[info.Program] {
			n++
		}
	}
	return n, it.Err()
}

// attach re-attaches every program and pins its link where enforcer.Open
// adopts it.
func (s *attachSet) attach() error {
	for _, a := range s.items {
		var (
			l   link.Link
			err error
		)
		switch a.prog.Type() {
		case ebpf.LSM:
			l, err = link.AttachLSM(link.LSMOptions{Program: a.prog})
		case ebpf.Tracing:
			l, err = link.AttachTracing(link.TracingOptions{Program: a.prog})
		default:
			l, err = link.AttachCgroup(link.CgroupOptions{Path: s.mount, Attach: a.cgAttach, Program: a.prog})
		}
		if err != nil {
			return fmt.Errorf("re-attach %s: %w", a.pin, err)
		}
		err = l.Pin(a.pin)
		l.Close()
		if err != nil {
			return fmt.Errorf("re-pin %s: %w", a.pin, err)
		}
	}
	return nil
}

func (s *attachSet) close() {
	for _, a := range s.items {
		a.prog.Close()
	}
}
