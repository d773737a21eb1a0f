package speccheck

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Mount types whose read-write mounts are allowed under write=false:
// devpts holds terminals only (writes to terminals stay allowed, and a new
// pty is not a file the workload names), mqueue holds POSIX message
// queues of the container's IPC namespace (IPC, like SysV shared memory,
// which the BPF LSM layer exempts too; mq_open reaches them without the
// mount). Every other type, tmpfs included, must be read-only: write=false
// forbids modifying an inode on any file system, memory ones too.
var rwTypes = map[string]bool{"devpts": true, "mqueue": true}

// harmlessChar are the character devices (major, minor; minor -1: any)
// the device cgroup may let a write=false container write: the BPF LSM
// layer's list (null, zero, full, random, urandom, tty, console, ptmx,
// /dev/pts/N). Writes to them modify no file.
var harmlessChar = [][2]int64{{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 1}, {5, 2}, {136, -1}}

// mountFlags reads a mount's options the way runc applies them, in order:
// "ro"/"rw" the mount's own read-only flag, "rro"/"rrw" the recursive one
// (mount_setattr), "bind"/"rbind" (or type "bind") a bind mount.
func mountFlags(m specs.Mount) (ro, rro, bind, rec bool) {
	bind = m.Type == "bind"
	for _, o := range m.Options {
		switch o {
		case "ro":
			ro = true
		case "rw":
			ro = false
		case "rro":
			rro = true
		case "rrw":
			rro = false
		case "bind":
			bind = true
		case "rbind":
			bind, rec = true, true
		}
	}
	return ro, rro, bind, rec
}

// checkWrite is the write=false rules; writable are the read-write mounts
// allowed beneath a writable root.
func checkWrite(spec *specs.Spec, o Options) (out []Missing, writable []string) {
	const f = "write"
	if spec == nil || spec.Linux == nil {
		return []Missing{missingf(f, RuleMountNamespace, "the spec has no linux section")}, nil
	}
	if spec.Root == nil || !spec.Root.Readonly {
		out = append(out, missingf(f, RuleRootReadonly, "root.readonly is not true: the container's root file system is writable"))
	}
	out = append(out, privateNamespace(spec, f, RuleMountNamespace, specs.MountNamespace)...)
	out = append(out, privatePIDs(spec, f)...)
	for _, m := range spec.Mounts {
		dest := cleanDest(m.Destination)
		ro, rro, bind, rec := mountFlags(m)
		inRoot := false
		for _, r := range o.WriteRoots {
			if beneath(dest, cleanDest(r)) {
				inRoot = true
				break
			}
		}
		switch {
		case inRoot:
			if !ro || (rec && !rro) {
				writable = append(writable, dest)
			}
		case !bind && rwTypes[m.Type]:
		case !ro:
			out = append(out, missingf(f, RuleMountReadonly, "mount %s (type %q, source %q) is not read-only: add the option \"ro\"", dest, m.Type, m.Source))
		case rec && !rro:
			out = append(out, missingf(f, RuleMountReadonly, "mount %s is a recursive bind (rbind) with \"ro\" alone: the mounts beneath it stay writable; add \"rro\" or use \"bind\"", dest))
		}
	}
	out = append(out, noCapSysAdmin(spec, f)...)
	out = append(out, checkDevices(spec)...)
	return out, writable
}

// checkDevices requires the device cgroup (linux.resources.devices, rules
// in order, a later one overriding) to start by denying every device and
// then to allow writes only to harmlessChar: a block device node (from
// linux.devices or a bind mount) writes a disk whatever its mount's flags.
func checkDevices(spec *specs.Spec) []Missing {
	const f = "write"
	var rules []specs.LinuxDeviceCgroup
	if spec.Linux.Resources != nil {
		rules = spec.Linux.Resources.Devices
	}
	if len(rules) == 0 || !denyAll(rules[0]) {
		return []Missing{missingf(f, RuleDevices, "linux.resources.devices does not start with a rule denying every device (allow false, no type or major/minor, access rwm)")}
	}
	var out []Missing
	for i, r := range rules[1:] {
		if !r.Allow || !(r.Access == "" || strings.ContainsRune(r.Access, 'w')) {
			continue
		}
		if r.Type != "c" || r.Major == nil || !harmless(*r.Major, r.Minor) {
			out = append(out, missingf(f, RuleDevices, "linux.resources.devices[%d] allows writes to %s: only null, zero, full, random, urandom, tty, console, ptmx and /dev/pts/N may be written", i+1, deviceString(r)))
		}
	}
	return out
}

func denyAll(r specs.LinuxDeviceCgroup) bool {
	return !r.Allow && (r.Type == "" || r.Type == "a") && r.Major == nil && r.Minor == nil &&
		(r.Access == "" || strings.ContainsRune(r.Access, 'w'))
}

func harmless(major int64, minor *int64) bool {
	for _, h := range harmlessChar {
		if h[0] != major {
			continue
		}
		if h[1] == -1 || (minor != nil && *minor == h[1]) {
			return true
		}
	}
	return false
}

func deviceString(r specs.LinuxDeviceCgroup) string {
	n := func(p *int64) string {
		if p == nil || *p < 0 {
			return "*"
		}
		return fmt.Sprint(*p)
	}
	t := r.Type
	if t == "" {
		t = "a"
	}
	return fmt.Sprintf("%s %s:%s", t, n(r.Major), n(r.Minor))
}
