package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/enforcerd/enforcerd/internal/failpoint"
)

// The intent of a registration: the container a registration is about to
// install, saved beside the state file (IntentPath) before its entry goes
// into the map, removed once the registration is saved or refused. A
// daemon killed in between leaves it, and the next start adopts the
// registration when the kernel holds its entry (registry.Reconcile).
//
// It is written atomically (a temporary file renamed over it) but not
// fsynced: it only matters while the kernel still holds the map entry it
// describes, that is after a crash of the process, which keeps the page
// cache; a crash of the machine loses the pinned maps too, and an intent
// then unreadable is ignored. The registration itself costs one fsync'd
// save, as before.

// IntentPath is where the intent of a registration in flight is kept,
// beside the state file at path.
func IntentPath(path string) string { return path + ".intent" }

// SaveIntent records c as the registration in flight (replacing any
// earlier intent). Errors: the file cannot be written.
func SaveIntent(path string, c Container) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("intent %s: %w", IntentPath(path), err)
	}
	ip := IntentPath(path)
	f, err := os.CreateTemp(filepath.Dir(ip), "."+filepath.Base(ip)+".tmp-*")
	if err != nil {
		return fmt.Errorf("intent %s: %w", ip, err)
	}
	tmp := f.Name() // mode 0600 (os.CreateTemp)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	failpoint.Hit("intent.write")
	if err == nil {
		err = os.Rename(tmp, ip)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("intent %s: %w", ip, err)
	}
	failpoint.Hit("intent.rename")
	return nil
}

// LoadIntent reads the registration in flight; ok is false when there is
// none. Errors: the file exists but cannot be read or decoded (after a
// crash of the machine: the caller ignores it, the kernel lost the entry
// too).
func LoadIntent(path string) (c Container, ok bool, err error) {
	b, err := os.ReadFile(IntentPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return Container{}, false, nil
	}
	if err != nil {
		return Container{}, false, fmt.Errorf("intent %s: %w", IntentPath(path), err)
	}
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" || c.CgroupID == 0 {
		return Container{}, false, fmt.Errorf("intent %s: %w: not a container (%v)", IntentPath(path), ErrCorrupt, err)
	}
	return c, true, nil
}

// RemoveIntent removes the intent (none is fine). Errors: it cannot be
// removed.
func RemoveIntent(path string) error {
	if err := os.Remove(IntentPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("intent %s: %w", IntentPath(path), err)
	}
	return nil
}
