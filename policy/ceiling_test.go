package policy

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func genShell() *rapid.Generator[Shell] { return rapid.SampledFrom(AllShells) }

func genCeiling() *rapid.Generator[Ceiling] {
	return rapid.Custom(func(t *rapid.T) Ceiling {
		return Ceiling{
			Network:         rapid.Bool().Draw(t, "network"),
			Write:           rapid.Bool().Draw(t, "write"),
			Shell:           genShell().Draw(t, "shell"),
			Tools:           rapid.Bool().Draw(t, "tools"),
			DelegationDepth: rapid.OneOf(rapid.Uint32Range(0, 4), rapid.Uint32()).Draw(t, "depth"),
		}
	})
}

func TestClampNeverWidens(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genCeiling().Draw(t, "a"), genCeiling().Draw(t, "b")
		m := a.Clamp(b)
		if !m.Within(a) || !m.Within(b) {
			t.Fatalf("%v.Clamp(%v) = %v widens an input", a, b, m)
		}
		// It is the greatest lower bound: anything below both is below m.
		c := genCeiling().Draw(t, "c")
		if c.Within(a) && c.Within(b) && !c.Within(m) {
			t.Fatalf("%v is below both inputs but not below their meet %v", c, m)
		}
	})
}

func TestClampIsCommutativeAssociativeIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genCeiling().Draw(t, "a"), genCeiling().Draw(t, "b"), genCeiling().Draw(t, "c")
		if a.Clamp(b) != b.Clamp(a) {
			t.Fatalf("not commutative: %v vs %v", a.Clamp(b), b.Clamp(a))
		}
		if a.Clamp(b).Clamp(c) != a.Clamp(b.Clamp(c)) {
			t.Fatal("not associative")
		}
		if a.Clamp(a) != a {
			t.Fatalf("not idempotent: %v", a.Clamp(a))
		}
		if a.Clamp(b).Clamp(b) != a.Clamp(b) {
			t.Fatal("re-clamping changed the result")
		}
	})
}

func TestClampTreatsUnknownShellAsNone(t *testing.T) {
	odd := Ceiling{Network: true, Write: true, Shell: "sudo", Tools: true, DelegationDepth: 9}
	got := odd.Clamp(DefaultSession())
	if got.Shell != ShellNone {
		t.Fatalf("unknown shell clamped to %q, want none", got.Shell)
	}
	if got := DefaultSession().Clamp(odd); got.Shell != ShellNone {
		t.Fatalf("unknown shell clamped to %q, want none", got.Shell)
	}
	if k := odd.Kernel(); k.Shell != ShellNone {
		t.Fatalf("kernel shell %q, want none", k.Shell)
	}
}

func TestClampTable(t *testing.T) {
	for _, tc := range []struct{ a, b, want Shell }{
		{ShellFull, ShellFull, ShellFull},
		{ShellFull, ShellReadOnly, ShellReadOnly},
		{ShellReadOnly, ShellNone, ShellNone},
		{ShellFull, ShellNone, ShellNone},
		{ShellReadOnly, ShellReadOnly, ShellReadOnly},
	} {
		got := Ceiling{Shell: tc.a}.Clamp(Ceiling{Shell: tc.b}).Shell
		if got != tc.want {
			t.Errorf("meet(%s,%s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
	a := Ceiling{Network: true, Write: false, Shell: ShellFull, Tools: true, DelegationDepth: 3}
	b := Ceiling{Network: false, Write: true, Shell: ShellReadOnly, Tools: false, DelegationDepth: 1}
	want := Ceiling{Shell: ShellReadOnly, DelegationDepth: 1}
	if got := a.Clamp(b); got != want {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestCeilingStringRoundTrips(t *testing.T) {
	if got := (Ceiling{Network: true, Shell: ShellReadOnly, Tools: true}).String(); got != "network=true,write=false,shell=read_only,tools=true,depth=0" {
		t.Fatalf("String() = %q", got)
	}
	if got := DefaultSession().String(); got != "network=true,write=true,shell=full,tools=true,depth=1" {
		t.Fatalf("DefaultSession() = %q", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		c, base := genCeiling().Draw(t, "c"), genCeiling().Draw(t, "base")
		got, err := ParseCeiling(c.String(), base)
		if err != nil || got != c {
			t.Fatalf("ParseCeiling(%q) = %v, %v", c.String(), got, err)
		}
	})
}

func TestParseCeilingSubsetsKeepBase(t *testing.T) {
	base := DefaultSession()
	for text, want := range map[string]Ceiling{
		"":                             base,
		"   ":                          base,
		"write=false":                  {Network: true, Shell: ShellFull, Tools: true, DelegationDepth: 1},
		"network=deny,shell=read_only": {Write: true, Shell: ShellReadOnly, Tools: true, DelegationDepth: 1},
		" depth = 7 , tools = allow ":  {Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 7},
		"depth=4294967295":             {Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 4294967295},
		"depth=007":                    {Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 7},
		"tools=false,shell=none,write=deny,network=false,depth=0": {Shell: ShellNone},
		"network=True,write=DENY,shell=Read_Only":                 {Network: true, Shell: ShellReadOnly, Tools: true, DelegationDepth: 1},
	} {
		got, err := ParseCeiling(text, base)
		if err != nil || got != want {
			t.Errorf("ParseCeiling(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
}

func TestParseCeilingErrorsNameTheField(t *testing.T) {
	for text, want := range map[string]string{
		"write=maybe":               `write: invalid value "maybe" (want true|false|allow|deny)`,
		"shell=partial":             `shell: invalid value "partial" (want none|read_only|full)`,
		"depth=-1":                  `depth: invalid value "-1" (want an integer 0..4294967295)`,
		"depth=4294967296":          `depth: invalid value "4294967296"`,
		"depth=+1":                  `depth: invalid value "+1"`,
		"depth=":                    `depth: invalid value ""`,
		"depth=1.5":                 `depth: invalid value "1.5"`,
		"network=yes":               `network: invalid value "yes"`,
		"tools=1":                   `tools: invalid value "1"`,
		"bogus=true":                `bogus: unknown field`,
		"delegation_depth=1":        `delegation_depth: unknown field`,
		"write=true,write=false":    `write: given more than once`,
		"network=true,,write=false": `item 2: empty item`,
		"network=true,":             `item 2: empty item`,
		",":                         `item 1: empty item`,
		"network":                   `network: missing "="`,
		"=true":                     `item 1: missing key`,
		"Network=true":              `Network: unknown field`,
	} {
		_, err := ParseCeiling(text, DefaultSession())
		if err == nil {
			t.Errorf("ParseCeiling(%q) succeeded", text)
			continue
		}
		if !errors.Is(err, ErrBadCeiling) {
			t.Errorf("ParseCeiling(%q): %v does not wrap ErrBadCeiling", text, err)
		}
		var ce *CeilingError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCeiling(%q): %T is not *CeilingError", text, err)
		}
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseCeiling(%q) error %q, want prefix %q", text, err, want)
		}
	}
}

// Booleans and shells follow the rule role names follow: trimmed, ASCII
// case-insensitive, nothing else.
func TestParseBoolAndShell(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, "allow": true, "false": false, "deny": false, " true ": true,
		"TRUE": true, "Allow": true, "False": false, "DeNy": false, "\tFALSE\n": false,
	} {
		got, err := ParseBool(in)
		if err != nil || got != want {
			t.Errorf("ParseBool(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", " ", "yes", "1", "0", "t", "denied", "truefalse",
		"fal\u017fe", "tru\u0435", "\u0430llow", "true\x00", "de ny"} {
		if _, err := ParseBool(in); !errors.Is(err, ErrBadCeiling) || !strings.Contains(err.Error(), "invalid value") {
			t.Errorf("ParseBool(%q) error %v", in, err)
		}
	}
	for _, s := range AllShells {
		for _, in := range []string{string(s), strings.ToUpper(string(s)), " " + strings.ToUpper(string(s[:1])) + string(s[1:]) + "\t"} {
			if got, err := ParseShell(in); err != nil || got != s {
				t.Errorf("ParseShell(%q) = %q, %v", in, got, err)
			}
		}
	}
	for _, in := range []string{"", "readonly", "read-only", "READ-ONLY", "partial", "ful\u006c\u0307", "nON\u0435"} {
		if _, err := ParseShell(in); !errors.Is(err, ErrBadCeiling) {
			t.Errorf("ParseShell(%q) accepted or misclassified: %v", in, err)
		}
	}
}

func TestKernelIsTheEnforcedPart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genCeiling().Draw(t, "a"), genCeiling().Draw(t, "b")
		k := a.Kernel()
		if k.Network != a.Network || k.Write != a.Write || k.Shell != a.Shell {
			t.Fatalf("Kernel(%v) = %v", a, k)
		}
		if a.Kernel().Clamp(b.Kernel()) != a.Clamp(b).Kernel() {
			t.Fatal("kernel meet differs from the ceiling meet")
		}
	})
}
