// Package devallow parses and resolves a container's device allow list:
// the device nodes its processes may use besides the null-like devices
// and their own terminals (enforcerd run --allow-device, the API's
// allow_devices, the enforcerd.io/allow-devices annotation). Under every
// ceiling, every other character or block device is refused in the kernel
// (docs/design.md "Device allow list"; entry.Entry.AllowDevices).
//
// Syntax (one entry):
//
//	c MAJOR:MINOR    a character device by number
//	b MAJOR:MINOR    a block device by number
//	/PATH            the device node at PATH (e.g. /dev/dri/renderD128),
//	                 resolved to its type and number at registration
//
// MAJOR is 1-4095 and MINOR 0-1048575, decimal (the kernel's 12 and 20
// bits). There are no wildcards: each device is listed. A path must be
// absolute, at most 4096 bytes, without NUL or comma; it names the node's
// number when it is resolved (Resolve), never later: a node re-created
// with another number does not follow. An OCI spec's linux.devices is not
// consent and never fills this list.
//
// Layering (docs/design.md): layer 1; it may import internal/inroot/, and
// of other modules no cilium/ebpf, not even through its imports.
package devallow

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Max is the most devices one registration may list
// (entry.MaxAllowDevices).
const Max = 16

// maxPathBytes bounds a path (the kernel's PATH_MAX).
const maxPathBytes = 4096

// MaxMajor and MaxMinor are the largest device numbers the kernel's
// encoding holds (MINORBITS = 20, 12 bits of major).
const (
	MaxMajor = 1<<12 - 1
	MaxMinor = 1<<20 - 1
)

// ErrBad is wrapped by every refusal of Parse, ParseList and Resolve.
var ErrBad = errors.New("bad device allow list")

// Device is one entry: a device by type and number, and the path it was
// resolved from ("" when it was given by number). Before Resolve, a path
// entry has Major 0.
type Device struct {
	// Block: a block device (b); false: a character device (c).
	Block bool   `json:"block,omitempty"`
	Major uint32 `json:"major"`
	Minor uint32 `json:"minor"`
	Path  string `json:"path,omitempty"`
}

// Dev is the device number in the kernel's encoding, major<<20|minor
// (inode->i_rdev; entry.Device.Dev).
func (d Device) Dev() uint32 { return d.Major<<20 | d.Minor }

// Resolved reports whether d has its number (a number entry, or a path
// entry after Resolve).
func (d Device) Resolved() bool { return d.Major != 0 }

// Same reports whether a and b are the same device to the kernel: type
// and number (a path is only a name).
func Same(a, b Device) bool { return a.Block == b.Block && a.Dev() == b.Dev() }

// Number is d's type and number in Parse's syntax ("c 226:128").
func (d Device) Number() string {
	t := "c"
	if d.Block {
		t = "b"
	}
	return fmt.Sprintf("%s %d:%d", t, d.Major, d.Minor)
}

// String gives d for a reader: its number, with the path it was resolved
// from in parentheses ("c 226:128 (/dev/dri/renderD128)"); an unresolved
// path entry is its path.
func (d Device) String() string {
	switch {
	case !d.Resolved():
		return d.Path
	case d.Path != "":
		return d.Number() + " (" + d.Path + ")"
	}
	return d.Number()
}

// Parse reads one entry (syntax above); a path entry comes back
// unresolved. Errors wrap ErrBad and quote the entry.
func Parse(s string) (Device, error) {
	bad := func(why string) (Device, error) {
		return Device{}, fmt.Errorf("%w: entry %q: %s (want c MAJOR:MINOR, b MAJOR:MINOR or an absolute path to a device node)", ErrBad, s, why)
	}
	if strings.HasPrefix(s, "/") {
		switch {
		case len(s) > maxPathBytes:
			return bad(fmt.Sprintf("the path is longer than %d bytes", maxPathBytes))
		case strings.ContainsAny(s, "\x00,"):
			return bad("the path has a NUL byte or a comma")
		}
		return Device{Path: path.Clean(s)}, nil
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return bad("empty")
	}
	if len(f) != 2 || (f[0] != "c" && f[0] != "b") {
		if !strings.HasPrefix(f[0], "/") && strings.Contains(f[0], "/") {
			return bad("a path must be absolute")
		}
		return bad("not a type (c or b) and a number")
	}
	maj, min, ok := strings.Cut(f[1], ":")
	if !ok {
		return bad("no ':' between major and minor")
	}
	if maj == "*" || min == "*" {
		return bad("wildcards are not allowed: list each device")
	}
	ma, err := number(maj, MaxMajor)
	if err != nil {
		return bad("major " + err.Error())
	}
	if ma == 0 {
		return bad("major 0 names no device")
	}
	mi, err := number(min, MaxMinor)
	if err != nil {
		return bad("minor " + err.Error())
	}
	return Device{Block: f[0] == "b", Major: ma, Minor: mi}, nil
}

// number parses a decimal of at most max: digits only (no sign, no
// base prefix).
func number(s string, max uint64) (uint32, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n > max {
		return 0, fmt.Errorf("%q is larger than %d", s, max)
	}
	return uint32(n), nil
}

// ParseList parses every entry of ss. Errors (wrapping ErrBad, naming the
// entry): an entry Parse refuses; an entry given twice (the same number,
// or the same cleaned path); more than Max entries.
func ParseList(ss []string) ([]Device, error) {
	if len(ss) > Max {
		return nil, fmt.Errorf("%w: %d devices, at most %d", ErrBad, len(ss), Max)
	}
	out := make([]Device, 0, len(ss))
	for _, s := range ss {
		d, err := Parse(s)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(out, func(o Device) bool { return dup(o, d) }); i >= 0 {
			return nil, fmt.Errorf("%w: entry %q: %s is listed twice", ErrBad, s, out[i])
		}
		out = append(out, d)
	}
	return out, nil
}

// dup: a and b name the same device (both resolved: by number) or the
// same path.
func dup(a, b Device) bool {
	if a.Resolved() && b.Resolved() {
		return Same(a, b)
	}
	return a.Path != "" && a.Path == b.Path
}

// SplitAnnotation splits a comma-separated list (the annotation's form:
// "c 226:128, /dev/dri/renderD128"); blanks around entries are trimmed, an
// empty entry or list is an error.
func SplitAnnotation(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%w: empty list", ErrBad)
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%w: empty entry in %q", ErrBad, v)
		}
		parts[i] = p
	}
	return parts, nil
}

// Intersect returns the devices of a that b lists too (Same), in a's
// order: the meet of two lists (a registration nested in another). Never
// nil.
func Intersect(a, b []Device) []Device {
	out := []Device{}
	for _, d := range a {
		if slices.ContainsFunc(b, func(o Device) bool { return Same(d, o) }) {
			out = append(out, d)
		}
	}
	return out
}

// Numbers gives every device's Number (a list Parse reads back exactly).
func Numbers(ds []Device) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Number()
	}
	return out
}

// Strings gives every device's String.
func Strings(ds []Device) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
