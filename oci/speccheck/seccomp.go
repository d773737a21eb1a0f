package speccheck

import (
	"math"
	"sort"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// denies reports whether action keeps a system call from running: errno,
// kill (thread or process) or trap. allow, log, trace (a tracer decides; none
// makes it ENOSYS, one may let it run), notify (a user-space agent decides)
// and any action this package does not know do not.
func denies(a specs.LinuxSeccompAction) bool {
	switch a {
	case specs.ActErrno, specs.ActKill, specs.ActKillProcess, specs.ActKillThread, specs.ActTrap:
		return true
	}
	return false
}

// cond is one comparison of a system call argument with constants.
type cond = specs.LinuxSeccompArg

// holds reports whether argument value v satisfies c (libseccomp compares
// the full 64-bit value). ok is false for an operator that is not a plain
// comparison the caller can reason about by regions (MASKED_EQ, unknown).
func holds(c cond, v uint64) (sat, ok bool) {
	switch c.Op {
	case specs.OpEqualTo:
		return v == c.Value, true
	case specs.OpNotEqual:
		return v != c.Value, true
	case specs.OpLessThan:
		return v < c.Value, true
	case specs.OpLessEqual:
		return v <= c.Value, true
	case specs.OpGreaterThan:
		return v > c.Value, true
	case specs.OpGreaterEqual:
		return v >= c.Value, true
	}
	return false, false
}

// ruleVariants are the ways a rule may be applied. runc (libcontainer
// seccomp) adds a rule whose conditions name one argument index more than
// once as one rule per condition (their OR), where libseccomp itself would
// AND them. mayVariants (for a rule that lets a call run) is the looser
// reading, sureVariant (for a rule that denies it) the stricter: each
// conclusion holds under both.
func mayVariants(r specs.LinuxSyscall) [][]cond {
	seen := map[uint]bool{}
	dup := false
	for _, a := range r.Args {
		if seen[a.Index] {
			dup = true
		}
		seen[a.Index] = true
	}
	if !dup {
		return [][]cond{r.Args}
	}
	out := make([][]cond, len(r.Args))
	for i, a := range r.Args {
		out[i] = []cond{a}
	}
	return out
}

// mayMatch reports whether conditions cs may hold for a call whose
// argument 0 is v, whatever its other arguments: conditions on other
// arguments, and ones on argument 0 this package cannot evaluate, are
// taken to hold.
func mayMatch(cs []cond, v uint64) bool {
	for _, c := range cs {
		if c.Index != 0 {
			continue
		}
		if sat, ok := holds(c, v); ok && !sat {
			return false
		}
	}
	return true
}

// surelyMatches reports whether conditions cs hold for every call whose
// argument 0 is v: only conditions on argument 0 that this package
// evaluates, all of them true (their AND).
func surelyMatches(cs []cond, v uint64) bool {
	for _, c := range cs {
		if c.Index != 0 {
			return false
		}
		sat, ok := holds(c, v)
		if !ok || !sat {
			return false
		}
	}
	return true
}

// probePoints are argument values standing for every region the
// comparisons of rules split the 64-bit range into: for each constant c,
// c-1, c and c+1; and 0, 1 and the maximum. Every plain comparison has the
// same truth at each value of a region, so checking these is checking all.
func probePoints(rules []specs.LinuxSyscall) []uint64 {
	set := map[uint64]bool{0: true, 1: true, 2: true, math.MaxUint64: true}
	add := func(c uint64) {
		set[c] = true
		if c > 0 {
			set[c-1] = true
		}
		if c < math.MaxUint64 {
			set[c+1] = true
		}
	}
	for _, r := range rules {
		for _, a := range r.Args {
			add(a.Value)
			add(a.ValueTwo)
		}
	}
	out := make([]uint64, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	// AF_INET (2) first: the value a message names when it is not denied.
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == 2) != (out[j] == 2) {
			return out[i] == 2
		}
		return out[i] < out[j]
	})
	return out
}

// denied reports whether filter sc keeps system call name from running
// for every value of its argument 0 that allowed does not accept (nil:
// every value), whatever the order in which the runtime's library applies
// rules that both match: a value is denied only when no rule that lets the
// call run may match it, and a denying rule surely matches it or the
// default action denies. It returns the first value found not denied
// (ok false) for the message.
func denied(sc *specs.LinuxSeccomp, name string, allowed func(uint64) bool) (bad uint64, ok bool) {
	var rules []specs.LinuxSyscall
	for _, r := range sc.Syscalls {
		for _, n := range r.Names {
			if n == name {
				rules = append(rules, r)
				break
			}
		}
	}
	for _, v := range probePoints(rules) {
		if allowed != nil && allowed(v) {
			continue
		}
		if !deniedAt(rules, sc.DefaultAction, v) {
			return v, false
		}
	}
	return 0, true
}

func deniedAt(rules []specs.LinuxSyscall, def specs.LinuxSeccompAction, v uint64) bool {
	sure := false
	for _, r := range rules {
		if !denies(r.Action) {
			for _, cs := range mayVariants(r) {
				if mayMatch(cs, v) {
					return false
				}
			}
			continue
		}
		if surelyMatches(r.Args, v) {
			sure = true
		}
	}
	// No rule that lets it run may match: a matching denying rule or
	// else the default action decides.
	return sure || denies(def)
}
