package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shell is the shell axis of a ceiling. The wire spelling of each value is
// exactly its string: "none", "read_only", "full". Shells are totally ordered
// none < read_only < full; Clamp takes the smaller one.
//
// Source: seed 001 (ShellCeiling).
type Shell string

// The closed shell vocabulary, narrowest first.
const (
	// ShellNone: no process may be started (kernel: no exec but the
	// entrypoint and an explicit allow list).
	ShellNone Shell = "none"
	// ShellReadOnly: processes may be started but run write-denied.
	ShellReadOnly Shell = "read_only"
	// ShellFull: unrestricted exec.
	ShellFull Shell = "full"
)

// AllShells lists every Shell, narrowest first. A test pins it against the
// declared constants.
var AllShells = []Shell{ShellNone, ShellReadOnly, ShellFull}

// rank orders shells for the meet. A value outside the vocabulary (only
// reachable by converting an arbitrary string) ranks with ShellNone: unknown
// fails toward the narrowest posture, never the widest.
func (s Shell) rank() int {
	switch s {
	case ShellReadOnly:
		return 1
	case ShellFull:
		return 2
	default:
		return 0
	}
}

// Valid reports whether s is one of AllShells.
func (s Shell) Valid() bool {
	switch s {
	case ShellNone, ShellReadOnly, ShellFull:
		return true
	}
	return false
}

// canonical maps s onto the vocabulary; an unknown value becomes ShellNone.
func (s Shell) canonical() Shell {
	if s.Valid() {
		return s
	}
	return ShellNone
}

// ParseShell parses a shell value: "none", "read_only" or "full", trimmed
// and ASCII case-insensitive ("Read_Only" is read_only), the rule role
// names and ParseBool follow. No Unicode case folding and no other
// spelling ("readonly", "read-only"). Any other text is an error wrapping
// ErrBadCeiling that quotes the value.
func ParseShell(s string) (Shell, error) {
	v := Shell(normalizeToken(s))
	if v.Valid() {
		return v, nil
	}
	return "", fmt.Errorf("%w: invalid value %q (want none|read_only|full)", ErrBadCeiling, s)
}

// ParseBool parses a ceiling boolean: "true" or "allow" (true), "false" or
// "deny" (false), trimmed and ASCII case-insensitive ("False", "DENY"),
// the rule role names follow. Nothing else is a boolean: "1", "yes" or "t"
// are errors rather than guesses, and no Unicode case folding applies
// ("fal\u017fe", with a LATIN SMALL LETTER LONG S, is not "false"). The
// error wraps ErrBadCeiling and quotes the value.
func ParseBool(s string) (bool, error) {
	switch normalizeToken(s) {
	case "true", "allow":
		return true, nil
	case "false", "deny":
		return false, nil
	}
	return false, fmt.Errorf("%w: invalid value %q (want true|false|allow|deny)", ErrBadCeiling, s)
}

// Ceiling is the permission ceiling of one agent: what it may reach, write,
// run, see, and how deep it may delegate. Field names follow the seeds
// (seed 001 PermissionCeiling, where Network is "network_tool").
//
// The JSON form is {"network","write","shell","tools","delegation_depth"}.
type Ceiling struct {
	// Network: the agent may reach the network (kernel: inet sockets).
	Network bool `json:"network"`
	// Write: the agent may modify the workspace (kernel: any inode).
	Write bool `json:"write"`
	// Shell: which processes the agent may start.
	Shell Shell `json:"shell"`
	// Tools: the agent sees any tool at all; false means an empty allow list.
	Tools bool `json:"tools"`
	// DelegationDepth: how many further levels of sub-agents it may spawn.
	DelegationDepth uint32 `json:"delegation_depth"`
}

// DefaultSession is the session ceiling used when none is given:
// network=true,write=true,shell=full,tools=true,depth=1.
func DefaultSession() Ceiling {
	return Ceiling{Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 1}
}

// Clamp returns the field-wise meet of c and o: each boolean is the AND, the
// shell is the narrower one, the depth is the minimum. The result is never
// wider than either input (Within both), and Clamp is commutative,
// associative and idempotent. A shell outside the vocabulary counts as
// ShellNone, so the result always holds a valid shell.
//
// Source: seed 001 (PermissionCeiling::clamp_to, ChildAuthority::clamp).
func (c Ceiling) Clamp(o Ceiling) Ceiling {
	shell := c.Shell.canonical()
	if o.Shell.rank() < shell.rank() {
		shell = o.Shell.canonical()
	}
	return Ceiling{
		Network:         c.Network && o.Network,
		Write:           c.Write && o.Write,
		Shell:           shell,
		Tools:           c.Tools && o.Tools,
		DelegationDepth: min(c.DelegationDepth, o.DelegationDepth),
	}
}

// Within reports whether c grants nothing that o does not: c is below or
// equal to o in every field. c.Clamp(o) is always Within both c and o.
func (c Ceiling) Within(o Ceiling) bool {
	return (!c.Network || o.Network) &&
		(!c.Write || o.Write) &&
		c.Shell.rank() <= o.Shell.rank() &&
		(!c.Tools || o.Tools) &&
		c.DelegationDepth <= o.DelegationDepth
}

// String renders the canonical ceiling text, every key in fixed order:
// "network=true,write=false,shell=read_only,tools=true,depth=0".
// ParseCeiling(c.String(), anything) returns c for every valid c.
func (c Ceiling) String() string {
	return fmt.Sprintf("network=%t,write=%t,shell=%s,tools=%t,depth=%d",
		c.Network, c.Write, c.Shell, c.Tools, c.DelegationDepth)
}

// ErrBadCeiling is the sentinel every ceiling-text parse error wraps; test
// for it with errors.Is.
var ErrBadCeiling = errors.New("bad ceiling")

// CeilingError is the error ParseCeiling returns. It names the field (the
// key as written, "" when the item has no key), the offending text and why.
// Its message reads "write: invalid value \"maybe\" (want true|false|allow|deny)".
// errors.Is(err, ErrBadCeiling) holds for every CeilingError.
type CeilingError struct {
	Field  string // the key ("network", "write", "shell", "tools", "depth", or an unknown one)
	Item   int    // 1-based position of the item in the comma-separated text
	Value  string // the offending value or item text
	Reason string // human-readable cause, without the field name
}

func (e *CeilingError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("item %d: %s", e.Item, e.Reason)
	}
	return e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrBadCeiling) true.
func (e *CeilingError) Is(target error) bool { return target == ErrBadCeiling }

// CeilingKeys are the keys of the ceiling text, in canonical order.
var CeilingKeys = []string{"network", "write", "shell", "tools", "depth"}

// ParseCeiling parses ceiling text "network=B,write=B,shell=S,tools=B,depth=N"
// on top of base: any subset of the keys in any order, absent keys keep
// base's value, and the empty (or all-blank) text returns base unchanged.
// White space around items, keys and values is ignored. Keys are exact
// (lower case); B is as ParseBool and S as ParseShell (both ASCII
// case-insensitive), N a decimal integer in 0..4294967295 (no sign).
//
// Errors are *CeilingError (wrapping ErrBadCeiling) naming the field: an
// unknown key, a key given twice, an item without "=", an empty item (",,"
// or a trailing comma), or a bad value. The text is never partially applied:
// on error the returned ceiling is the zero Ceiling.
//
// This is the one spelling of a ceiling wherever one is written as text:
// surface --session, the enforcerd.io/ceiling annotation, the API's
// "ceiling" (register and narrow).
func ParseCeiling(text string, base Ceiling) (Ceiling, error) {
	if strings.TrimSpace(text) == "" {
		return base, nil
	}
	out := base
	seen := make(map[string]bool, len(CeilingKeys))
	for i, item := range strings.Split(text, ",") {
		pos := i + 1
		item = strings.TrimSpace(item)
		if item == "" {
			return Ceiling{}, &CeilingError{Item: pos, Reason: "empty item (want key=value)"}
		}
		key, value, ok := strings.Cut(item, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok {
			return Ceiling{}, &CeilingError{Field: key, Item: pos, Value: item,
				Reason: fmt.Sprintf("missing \"=\" in %q (want key=value)", item)}
		}
		if key == "" {
			return Ceiling{}, &CeilingError{Item: pos, Value: item,
				Reason: fmt.Sprintf("missing key in %q (want key=value)", item)}
		}
		if seen[key] {
			return Ceiling{}, &CeilingError{Field: key, Item: pos, Value: value, Reason: "given more than once"}
		}
		seen[key] = true
		var err error
		switch key {
		case "network":
			out.Network, err = ParseBool(value)
		case "write":
			out.Write, err = ParseBool(value)
		case "tools":
			out.Tools, err = ParseBool(value)
		case "shell":
			out.Shell, err = ParseShell(value)
		case "depth":
			out.DelegationDepth, err = parseDepth(value)
		default:
			return Ceiling{}, &CeilingError{Field: key, Item: pos, Value: value,
				Reason: "unknown field (want network|write|shell|tools|depth)"}
		}
		if err != nil {
			// The value parsers' messages start with the sentinel's text;
			// the CeilingError carries the sentinel itself.
			reason := strings.TrimPrefix(err.Error(), ErrBadCeiling.Error()+": ")
			return Ceiling{}, &CeilingError{Field: key, Item: pos, Value: value, Reason: reason}
		}
	}
	return out, nil
}

// parseDepth accepts only ASCII decimal digits that fit a uint32.
func parseDepth(s string) (uint32, error) {
	bad := fmt.Errorf("%w: invalid value %q (want an integer 0..4294967295)", ErrBadCeiling, s)
	if s == "" {
		return 0, bad
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, bad
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, bad
	}
	return uint32(n), nil
}

// KernelCeiling is the part of a ceiling enforcerd installs in the kernel:
// the eBPF programs make network, write and shell true for every process in
// the container's cgroup subtree. Tools and delegation depth only shape the
// model's surface and have no kernel form.
type KernelCeiling struct {
	Network bool  `json:"network"`
	Write   bool  `json:"write"`
	Shell   Shell `json:"shell"`
}

// Kernel returns the kernel part of c. An out-of-vocabulary shell becomes
// ShellNone, so the kernel never receives a value it cannot interpret.
func (c Ceiling) Kernel() KernelCeiling {
	return KernelCeiling{Network: c.Network, Write: c.Write, Shell: c.Shell.canonical()}
}

// Clamp returns the field-wise meet of two kernel ceilings; the kernel
// enforces a nested container with the meet of every enforced ancestor.
func (k KernelCeiling) Clamp(o KernelCeiling) KernelCeiling {
	c := Ceiling{Network: k.Network, Write: k.Write, Shell: k.Shell}.
		Clamp(Ceiling{Network: o.Network, Write: o.Write, Shell: o.Shell})
	return c.Kernel()
}

// String renders "network=B,write=B,shell=S".
func (k KernelCeiling) String() string {
	return fmt.Sprintf("network=%t,write=%t,shell=%s", k.Network, k.Write, k.Shell)
}
