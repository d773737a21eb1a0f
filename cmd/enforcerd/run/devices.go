package run

import (
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/ownterm"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// allowDevices parses and resolves run's --allow-device entries on this
// host (devallow.ParseList, devallow.Resolve in "/"). Every refusal is a
// usage error (exit 2) naming the flag and the entry: bad syntax, a
// duplicate, more than 16, a path that is missing or not a device node.
func allowDevices(entries []string) ([]devallow.Device, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	ds, err := devallow.ParseList(entries)
	if err != nil {
		return nil, cli.UsageErrorf("--allow-device: %w", err)
	}
	if ds, err = devallow.Resolve(ds, "/"); err != nil {
		return nil, cli.UsageErrorf("--allow-device: %w", err)
	}
	return ds, nil
}

// entryDevices is the kernel form of run's device allow list.
func entryDevices(ds []devallow.Device) []entry.Device {
	var out []entry.Device
	for _, d := range ds {
		out = append(out, entry.Device{Block: d.Block, Dev: d.Dev()})
	}
	return out
}

// ownTerminals is what run declares as CMD's own terminals: run's own
// stdio and controlling terminal, which CMD inherits (ownterm.Self;
// tests substitute it).
var ownTerminals = ownterm.Self

// allowDeviceUsage is run's help for --allow-device.
const allowDeviceUsage = `  --allow-device DEV     a device node CMD may use besides the null-like
                         devices (null, zero, full, random, urandom) and
                         its own terminals (repeatable, at most 16), under
                         every ceiling: c MAJOR:MINOR, b MAJOR:MINOR, or the
                         absolute path of a device node (e.g.
                         /dev/dri/renderD128), resolved to its type and
                         number when run starts (a node re-created with
                         another number later is not followed). Every
                         other character or block device is refused: open
                         in any mode, read, write, ioctl, mmap. CMD's own
                         terminals are run's standard input, output, error
                         and controlling terminal (a pty with its devpts
                         instance) and the ptys CMD creates from
                         /dev/ptmx; every other terminal is a host device.
                         A bad entry, a duplicate, a path that is missing
                         or not a device node is a usage error. Inside a
                         registered cgroup only what every enclosing
                         ceiling also lists is usable
`
