package run

import (
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// writeRootIDs resolves run's --write-root paths for ceiling k: the
// identities the kernel matches (entry.WriteRootOf). Every refusal is a
// usage error (exit 2) naming the flag: a root with write allowed (it would
// read as a restriction that is not there), more than policy.MaxWriteRoots,
// a relative path, a path that does not exist or is not a directory, or a
// filesystem the roots cannot be enforced on.
func writeRootIDs(paths []string, k policy.KernelCeiling) ([]entry.FileID, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if k.Write {
		return nil, cli.UsageErrorf("--write-root needs --write=deny (the ceiling allows writes everywhere)")
	}
	clean, err := policy.CheckWriteRootPaths(paths)
	if err != nil {
		return nil, cli.UsageErrorf("--write-root: %w", err)
	}
	ids := make([]entry.FileID, 0, len(clean))
	for _, p := range clean {
		id, err := entry.WriteRootOf(p)
		if err != nil {
			return nil, cli.UsageErrorf("--write-root: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// writeRootsUsage is run's help for --write-root.
const writeRootsUsage = `  --write-root DIR       with --write=deny: writes stay allowed beneath
                         DIR (repeatable, at most 16; an absolute path to
                         an existing directory on ext2/3/4, xfs, tmpfs,
                         ramfs or f2fs). Matched by device and inode: no
                         alias reaches outside (.., symlinks, hard links,
                         renames in or out, descriptors of outside files);
                         a file hard-linked into DIR before run counts as
                         inside. On a filesystem mounted beneath DIR only
                         writes through open files (not creation,
                         removal, truncation or metadata) are allowed.
                         Without --write=deny it is a usage error
`
