package policy

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParseCeiling(f *testing.F) {
	for _, s := range []string{"", "network=true,write=false,shell=read_only,tools=true,depth=0", "write=maybe",
		"shell=partial", "depth=-1", "depth=4294967296", ",", "a=b=c", " network = deny ", "write=true,write=true"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		base := DefaultSession()
		c, err := ParseCeiling(text, base)
		if err != nil {
			var ce *CeilingError
			if !errors.Is(err, ErrBadCeiling) || !errors.As(err, &ce) {
				t.Fatalf("error %v is not a CeilingError", err)
			}
			if c != (Ceiling{}) {
				t.Fatalf("partial result %v on error", c)
			}
			return
		}
		if !c.Shell.Valid() {
			t.Fatalf("invalid shell %q", c.Shell)
		}
		again, err := ParseCeiling(c.String(), Ceiling{})
		if err != nil || again != c {
			t.Fatalf("canonical text %q does not round-trip: %v %v", c.String(), again, err)
		}
	})
}

func FuzzResolveRole(f *testing.F) {
	for _, s := range []string{"", "general", " Worker ", "auditor", "wor\u212Aer", "smoke-runner", "read-only", "\u00a0custom"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		res := ResolveRole(name)
		if !res.Role.Valid() || res.Input != name {
			t.Fatalf("%+v", res)
		}
		a := AuthorityForRole(name, DefaultSession())
		if a.Ceiling.Write && !declaredWriteTokens[normalizeToken(name)] {
			t.Fatalf("undeclared %q resolved to write", name)
		}
		if res.Source == RoleFromUnknown && (res.Role != RoleExplore || res.Label != strings.TrimSpace(name)) {
			t.Fatalf("unknown %q: %+v", name, res)
		}
		if _, ok := ParseRole(name); ok != (res.Source == RoleFromCanonical || res.Source == RoleFromLegacy) {
			t.Fatalf("ParseRole and ResolveRole disagree on %q", name)
		}
	})
}

// FuzzLookupRole: the strict parser accepts a name iff ResolveRole finds it
// in a declared table, with the same resolution; every refusal is a
// RoleError naming the input and listing every valid name; nothing
// undeclared gets write authority.
func FuzzLookupRole(f *testing.F) {
	for _, s := range []string{"", " ", "reviewer", " Worker ", "reviwer", "hacker", "wor\u212Aer", "smoke-runner", "Read-Only", "\u00a0custom", "custom\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		res, err := LookupRole(name)
		resolved := ResolveRole(name)
		if err != nil {
			var re *RoleError
			if !errors.Is(err, ErrUnknownRole) || !errors.As(err, &re) || re.Name != name || res != (Resolution{}) {
				t.Fatalf("LookupRole(%q) = %+v, %v", name, res, err)
			}
			if resolved.Source != RoleFromEmpty && resolved.Source != RoleFromUnknown {
				t.Fatalf("LookupRole refused %q, which ResolveRole found (%s)", name, resolved.Source)
			}
			for _, n := range RoleNames() {
				if !strings.Contains(err.Error(), n) {
					t.Fatalf("error for %q does not list %q", name, n)
				}
			}
			return
		}
		if res != resolved || !res.Role.Valid() {
			t.Fatalf("LookupRole(%q) = %+v, ResolveRole %+v", name, res, resolved)
		}
		if AuthorityFor(res.Role, DefaultSession()).Ceiling.Write && !declaredWriteTokens[normalizeToken(name)] {
			t.Fatalf("undeclared %q accepted with write", name)
		}
	})
}

// FuzzParseBool: ParseBool and ParseShell accept exactly the ASCII
// case-insensitive, trimmed spellings of their vocabularies.
func FuzzParseBool(f *testing.F) {
	for _, s := range []string{"true", "False", " DENY ", "allow", "yes", "fal\u017fe", "Read_Only", "none", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		token := normalizeToken(s)
		b, err := ParseBool(s)
		switch token {
		case "true", "allow", "false", "deny":
			if err != nil || b != (token == "true" || token == "allow") {
				t.Fatalf("ParseBool(%q) = %v, %v", s, b, err)
			}
		default:
			if !errors.Is(err, ErrBadCeiling) {
				t.Fatalf("ParseBool(%q) accepted", s)
			}
		}
		sh, err := ParseShell(s)
		if Shell(token).Valid() != (err == nil) || (err == nil && sh != Shell(token)) {
			t.Fatalf("ParseShell(%q) = %q, %v", s, sh, err)
		}
	})
}

func FuzzParseToolGroups(f *testing.F) {
	for _, s := range []string{"", ",,", "messaging, Meta ,web_tools", "bogus", "execution,EXECUTION", "web_tools,forge,x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		groups, warnings := ParseToolGroups(raw)
		if len(groups) == 0 {
			t.Fatal("no groups")
		}
		for _, g := range groups {
			if !g.Valid() {
				t.Fatalf("invalid group %q", g)
			}
		}
		if len(BuiltinToolsFor(groups)) == 0 {
			t.Fatal("empty --tools")
		}
		for _, w := range warnings {
			if w == "" {
				t.Fatal("empty warning")
			}
		}
		s := ResolveSurface(mustRole("general"), DefaultSession(), raw)
		if len(s.Warnings) != len(warnings) {
			t.Fatalf("warnings %v vs %v", s.Warnings, warnings)
		}
	})
}
