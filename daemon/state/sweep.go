package state

import (
	"fmt"
	"os"
	"path/filepath"
)

// tempPattern is the glob of the temporary files Save writes next to the
// state file at path before renaming one over it.
func tempPattern(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
}

// SweepTemp removes the temporary files of saves to path, and of its
// intent (IntentPath), that a crash interrupted (before their rename),
// and returns their names. Only the
// process that holds the state lock may call it: another's save in flight
// would lose its file. Errors: the directory cannot be read, or a file
// cannot be removed (the others are removed all the same).
func SweepTemp(path string) ([]string, error) {
	var names []string
	for _, p := range []string{tempPattern(path), tempPattern(IntentPath(path))} {
		ns, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("state %s: %w", path, err)
		}
		names = append(names, ns...)
	}
	var removed []string
	var first error
	for _, n := range names {
		if err := os.Remove(n); err != nil && !os.IsNotExist(err) {
			if first == nil {
				first = fmt.Errorf("state %s: remove interrupted save: %w", path, err)
			}
			continue
		}
		removed = append(removed, n)
	}
	return removed, first
}
