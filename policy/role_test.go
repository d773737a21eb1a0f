package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestRoleVocabularyIsTheSchemaOrder(t *testing.T) {
	want := "general,explore,planner,reviewer,implement,test,advisor,custom"
	var got []string
	for _, r := range AllRoles {
		got = append(got, string(r))
	}
	if strings.Join(got, ",") != want {
		t.Fatalf("AllRoles = %v", got)
	}
}

func TestEveryLegacyAliasParses(t *testing.T) {
	want := map[string]Role{
		"worker": RoleGeneral, "general-purpose": RoleGeneral, "general_purpose": RoleGeneral, "default": RoleGeneral,
		"scout": RoleExplore, "exploration": RoleExplore, "explorer": RoleExplore,
		"plan": RolePlanner, "planning": RolePlanner, "awaiter": RolePlanner,
		"review": RoleReviewer, "code-review": RoleReviewer, "code_review": RoleReviewer,
		"builder": RoleImplement, "implementer": RoleImplement, "implementation": RoleImplement,
		"verifier": RoleTest, "verify": RoleTest, "verification": RoleTest, "validator": RoleTest, "tester": RoleTest,
		"consultant": RoleAdvisor, "oracle": RoleAdvisor,
	}
	if got := LegacyRoleAliases(); len(got) != len(want) {
		t.Fatalf("LegacyRoleAliases has %d entries, want %d", len(got), len(want))
	}
	for alias, role := range want {
		for _, spelling := range []string{alias, strings.ToUpper(alias), "  " + alias + "\t"} {
			got, ok := ParseRole(spelling)
			if !ok || got != role {
				t.Errorf("ParseRole(%q) = %q, %v; want %q", spelling, got, ok, role)
			}
			res := ResolveRole(spelling)
			if res.Role != role || res.Source != RoleFromLegacy || res.Label != string(role) {
				t.Errorf("ResolveRole(%q) = %+v", spelling, res)
			}
			if PublicLabel(spelling) != string(role) {
				t.Errorf("PublicLabel(%q) = %q", spelling, PublicLabel(spelling))
			}
		}
	}
	for _, r := range AllRoles {
		if got, ok := ParseRole(" " + strings.ToUpper(string(r)) + " "); !ok || got != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, ok)
		}
		if res := ResolveRole(string(r)); res.Role != r || res.Source != RoleFromCanonical || res.Label != string(r) {
			t.Errorf("ResolveRole(%q) = %+v", r, res)
		}
	}
}

func TestMemberAliasesResolveButDoNotParse(t *testing.T) {
	want := map[string]Role{
		"manager": RoleGeneral, "coordinator": RoleGeneral, "operator": RoleGeneral,
		"synthesizer": RolePlanner, "summarizer": RolePlanner, "reducer": RolePlanner,
		"smoke-runner": RoleTest, "read-only": RoleExplore,
	}
	if got := MemberRoleAliases(); len(got) != len(want) {
		t.Fatalf("MemberRoleAliases has %d entries, want %d", len(got), len(want))
	}
	for title, role := range want {
		if _, ok := ParseRole(title); ok {
			t.Errorf("ParseRole(%q) accepted a member title", title)
		}
		res := ResolveRole(" " + strings.ToUpper(title[:1]) + title[1:])
		if res.Role != role || res.Source != RoleFromMember {
			t.Errorf("ResolveRole(%q) = %+v, want %q", title, res, role)
		}
		// The label keeps the name as given (trimmed, case kept).
		if res.Label != strings.ToUpper(title[:1])+title[1:] {
			t.Errorf("ResolveRole(%q).Label = %q", title, res.Label)
		}
	}
}

func TestEmptyRoleIsGeneral(t *testing.T) {
	for _, in := range []string{"", " ", "\t\n", "\u00a0"} {
		res := ResolveRole(in)
		if res.Role != RoleGeneral || res.Source != RoleFromEmpty || res.Label != "general" {
			t.Errorf("ResolveRole(%q) = %+v", in, res)
		}
	}
}

func TestUnknownRoleFailsClosedToExploreAndKeepsItsLabel(t *testing.T) {
	for in, label := range map[string]string{
		"auditor":           "auditor",
		"  Release-Lead  ":  "Release-Lead",
		"admin":             "admin",
		"root":              "root",
		"general purpose":   "general purpose",
		"wor\u212Aer":       "wor\u212Aer", // KELVIN SIGN must not fold to "worker"
		"\u0130mplement":    "\u0130mplement",
		"general\x00":       "general\x00",
		"implement,general": "implement,general",
	} {
		res := ResolveRole(in)
		if res.Role != RoleExplore || res.Source != RoleFromUnknown || res.Label != label {
			t.Errorf("ResolveRole(%q) = %+v, want explore labelled %q", in, res, label)
		}
		if PublicLabel(in) != label {
			t.Errorf("PublicLabel(%q) = %q", in, PublicLabel(in))
		}
	}
}

func TestRequestedCeilingIsTheProductTable(t *testing.T) {
	session := Ceiling{Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 3}
	type row struct {
		write, network bool
		shell          Shell
		depth          uint32
	}
	want := map[Role]row{
		RoleGeneral:   {true, true, ShellFull, 2},
		RoleExplore:   {false, true, ShellReadOnly, 0},
		RolePlanner:   {false, true, ShellReadOnly, 0},
		RoleReviewer:  {false, false, ShellReadOnly, 0},
		RoleImplement: {true, true, ShellFull, 2},
		RoleTest:      {false, false, ShellFull, 0},
		RoleAdvisor:   {false, true, ShellNone, 0},
		RoleCustom:    {true, true, ShellFull, 2},
	}
	for _, r := range AllRoles {
		c := RequestedCeiling(r, session)
		w := want[r]
		if c.Write != w.write || c.Network != w.network || c.Shell != w.shell || !c.Tools || c.DelegationDepth != w.depth {
			t.Errorf("RequestedCeiling(%s) = %v, want %+v", r, c, w)
		}
	}
	// Depth floors at zero.
	for _, r := range []Role{RoleGeneral, RoleImplement, RoleCustom} {
		if d := RequestedCeiling(r, Ceiling{}).DelegationDepth; d != 0 {
			t.Errorf("%s depth with session depth 0 = %d", r, d)
		}
		if d := RequestedCeiling(r, Ceiling{DelegationDepth: 4294967295}).DelegationDepth; d != 4294967294 {
			t.Errorf("%s depth with max session depth = %d", r, d)
		}
	}
	// A Role outside the vocabulary asks for what explore asks for.
	if RequestedCeiling("root", session) != RequestedCeiling(RoleExplore, session) {
		t.Error("an out-of-vocabulary Role is not treated as explore")
	}
}

func TestReadOnlyShellRoles(t *testing.T) {
	for _, r := range AllRoles {
		want := r == RoleExplore || r == RoleReviewer || r == RolePlanner
		if RequiresReadOnlyShell(r) != want {
			t.Errorf("RequiresReadOnlyShell(%s) = %v", r, !want)
		}
		if want && RequestedCeiling(r, DefaultSession()).Shell == ShellFull {
			t.Errorf("%s asks for a full shell", r)
		}
	}
}

// declaredWriteTokens are the only normalised names that may resolve to a
// role with write authority: the write roles, their legacy aliases, the
// member titles that map to general, and the empty (unspecified) name.
var declaredWriteTokens = map[string]bool{
	"": true, "general": true, "worker": true, "general-purpose": true, "general_purpose": true, "default": true,
	"implement": true, "builder": true, "implementer": true, "implementation": true,
	"custom": true, "manager": true, "coordinator": true, "operator": true,
}

func TestNoUndeclaredRoleResolvesToWrite(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, name string) {
		for _, session := range []Ceiling{DefaultSession(), {Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 5}} {
			a := AuthorityForRole(name, session)
			s := SurfaceFor(ResolveRole(name), session, nil)
			if !a.Ceiling.Write && a.WriteAuthority == WriteAuthorityReadOnly && !s.Kernel.Write {
				continue
			}
			if !declaredWriteTokens[normalizeToken(name)] {
				t.Fatalf("undeclared role %q resolved to write (%v)", name, a.Ceiling)
			}
		}
	}
	// Near misses of every declared name.
	for tok := range declaredWriteTokens {
		for _, v := range []string{tok + "s", tok + "\x00", "x" + tok, strings.ReplaceAll(tok, "e", "\u0435"),
			strings.ReplaceAll(tok, "k", "\u212A"), strings.ReplaceAll(tok, "i", "\u0130"), tok + "\u200b", "\u200b" + tok} {
			check(t, v)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`[ \t]*[A-Za-z_\-]{0,16}[ \t]*`),
			rapid.Custom(func(t *rapid.T) string {
				tok := rapid.SampledFrom([]string{"general", "worker", "implement", "builder", "custom", "manager", "operator", "explore", "test"}).Draw(t, "tok")
				i := rapid.IntRange(0, len(tok)).Draw(t, "i")
				ins := rapid.SampledFrom([]string{"", "\u212A", "\u0130", "-", "_", " ", "\x00", "\u00a0", "K", "I"}).Draw(t, "ins")
				return tok[:i] + ins + tok[i:]
			}),
		).Draw(t, "name")
		check(t, name)
	})
}

// Every declared name, in any ASCII case and with white space around it, is
// accepted by LookupRole with exactly ResolveRole's resolution.
func TestLookupRoleAcceptsEveryDeclaredName(t *testing.T) {
	names := RoleNames()
	if len(names) != len(AllRoles)+len(LegacyRoleAliases())+len(MemberRoleAliases()) {
		t.Fatalf("RoleNames has %d names; a name is in two tables or missing", len(names))
	}
	if !slices.IsSorted(names) {
		t.Fatalf("RoleNames not sorted: %v", names)
	}
	for _, name := range names {
		for _, spelling := range []string{name, strings.ToUpper(name), " " + strings.ToUpper(name[:1]) + name[1:] + "\t", "\u00a0" + name} {
			res, err := LookupRole(spelling)
			if err != nil {
				t.Errorf("LookupRole(%q): %v", spelling, err)
				continue
			}
			if res != ResolveRole(spelling) || !res.Role.Valid() || res.Input != spelling {
				t.Errorf("LookupRole(%q) = %+v, ResolveRole %+v", spelling, res, ResolveRole(spelling))
			}
			if res.Source != RoleFromCanonical && res.Source != RoleFromLegacy && res.Source != RoleFromMember {
				t.Errorf("LookupRole(%q) source %s", spelling, res.Source)
			}
		}
	}
}

// A name that is not declared, and a given but empty name, are errors: no
// fallback to explore, no default to general.
func TestLookupRoleRejectsUnknownAndEmptyNames(t *testing.T) {
	for _, in := range []string{
		"", " ", "\t\n", "\u00a0",
		"reviwer", "hacker", "auditor", "admin", "root", "general purpose",
		"wor\u212Aer", "\u0130mplement", "general\x00", "implement,general", "custom\u200b",
		"explore.", "read_only", "smoke_runner", "general-", "-general",
	} {
		res, err := LookupRole(in)
		if err == nil {
			t.Errorf("LookupRole(%q) accepted: %+v", in, res)
			continue
		}
		if res != (Resolution{}) {
			t.Errorf("LookupRole(%q) returned %+v with its error", in, res)
		}
		var re *RoleError
		if !errors.Is(err, ErrUnknownRole) || !errors.As(err, &re) || re.Name != in {
			t.Errorf("LookupRole(%q): %T %v is not a RoleError for the name", in, err, err)
		}
		msg := err.Error()
		if strings.TrimSpace(in) == "" {
			if !strings.HasPrefix(msg, "empty role name; valid names: ") {
				t.Errorf("LookupRole(%q): %q", in, msg)
			}
		} else if !strings.HasPrefix(msg, fmt.Sprintf("unknown role %q; valid names: ", in)) {
			t.Errorf("LookupRole(%q): %q", in, msg)
		}
		for _, name := range RoleNames() {
			if !strings.Contains(msg, name) {
				t.Errorf("LookupRole(%q): message does not list %q", in, name)
			}
		}
	}
}

// The list of valid names is stable: each group sorted, in one fixed order.
func TestRoleErrorListsTheValidNames(t *testing.T) {
	want := `unknown role "x"; valid names: ` +
		"roles advisor, custom, explore, general, implement, planner, reviewer, test; " +
		"legacy aliases awaiter, builder, code-review, code_review, consultant, default, exploration, explorer, " +
		"general-purpose, general_purpose, implementation, implementer, oracle, plan, planning, review, scout, " +
		"tester, validator, verification, verifier, verify, worker; " +
		"org-chart member titles coordinator, manager, operator, read-only, reducer, smoke-runner, summarizer, synthesizer"
	if got := (&RoleError{Name: "x"}).Error(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestUnspecifiedRoleIsGeneral(t *testing.T) {
	res := UnspecifiedRole()
	if res != (Resolution{Role: RoleGeneral, Label: "general", Source: RoleFromEmpty}) {
		t.Fatalf("%+v", res)
	}
	// ResolveRole's blank name is the same default, its input kept.
	if r := ResolveRole(" "); r.Role != res.Role || r.Label != res.Label || r.Source != res.Source || r.Input != " " {
		t.Fatalf("ResolveRole(\" \") = %+v", r)
	}
}

// LookupRole accepts exactly the names ResolveRole resolves through its
// declared tables, never one its empty or unknown steps would absorb, and
// nothing it accepts outside the declared names holds write authority.
func TestLookupRoleNeverFallsBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`[ \t]*[A-Za-z_\-]{0,16}[ \t]*`),
			rapid.SampledFrom(RoleNames()),
		).Draw(t, "name")
		res, err := LookupRole(name)
		resolved := ResolveRole(name)
		switch resolved.Source {
		case RoleFromEmpty, RoleFromUnknown:
			if err == nil || !errors.Is(err, ErrUnknownRole) {
				t.Fatalf("LookupRole(%q) = %+v, %v; ResolveRole fell back (%s)", name, res, err, resolved.Source)
			}
		default:
			if err != nil || res != resolved {
				t.Fatalf("LookupRole(%q) = %+v, %v; ResolveRole %+v", name, res, err, resolved)
			}
			if AuthorityFor(res.Role, DefaultSession()).Ceiling.Write && !declaredWriteTokens[normalizeToken(name)] {
				t.Fatalf("undeclared %q accepted with write", name)
			}
		}
	})
}
