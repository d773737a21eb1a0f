package enforcer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
)

// FillTally fills the installed tally map with keys of no cgroup until it
// is full, so that the next distinct denial overflows; it returns how many
// entries it added.
func FillTally(e *Enforcer) (int, error) {
	var m *ebpf.Map
	if err := e.tallySlot.Lookup(uint32(0), &m); err != nil {
		return 0, fmt.Errorf("installed tally map: %w", err)
	}
	defer m.Close()
	for i := 0; ; i++ {
		k := bpf.SharedTallyKey{CeilingCgroupId: 1<<62 + uint64(i)}
		err := m.Update(&k, uint64(0), ebpf.UpdateNoExist)
		if errors.Is(err, unix.E2BIG) {
			return i, nil
		}
		if err != nil {
			return i, err
		}
	}
}

// HaveCgroupStorage reports whether the loader gives resolve()'s hot word
// cgroup local storage on this kernel (cgrpstorage.go).
func HaveCgroupStorage() bool { return haveCgroupStorage() }
