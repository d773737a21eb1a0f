package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// isPostureDenial reports whether rule is an entry of any posture deny list
// (seed 001 is_posture_denial, a test-only helper there too).
func isPostureDenial(rule string) bool {
	for _, d := range AllDenyLists {
		for _, e := range d.Entries() {
			if EqualFoldASCII(e, strings.TrimSpace(rule)) {
				return true
			}
		}
	}
	return false
}

func TestDenyListsHaveTheSeedEntries(t *testing.T) {
	want := map[DenyList]string{
		DenyNetworkTools: "web_*,web.*,web.run,web_run,web_search,web.fetch,web_fetch,fetch_url,wait_for_dev_server," +
			"browse,browser,github,finance,rlm_open,rlm_eval,mcp*,start_mcp_server,list_mcp_resources," +
			"list_mcp_resource_templates,read_mcp_resource",
		DenyMutatingTools: "write_file,edit_file,apply_patch,fim_edit,revert_turn,rlm_eval",
		DenyRawShell: "Bash,exec_shell,exec_shell_wait,exec_wait,exec_shell_interact,exec_interact," +
			"exec_shell_cancel,task_shell_start,task_shell_wait,terminal/*",
		DenyVerificationSurface: "Run,run_tests,run_verifiers",
		DenyNonShellExecution: "task_gate_run,task_create,task_cancel,pr_attempt_record,pr_attempt_preflight," +
			"automation_run,automation_create,automation_update,automation_pause,automation_resume," +
			"automation_delete,start_mcp_server",
	}
	for _, d := range AllDenyLists {
		if got := strings.Join(d.Entries(), ","); got != want[d] {
			t.Errorf("%s entries:\n got %s\nwant %s", d, got, want[d])
		}
	}
	// Entries returns a copy.
	e := DenyRawShell.Entries()
	e[0] = "mutated"
	if DenyRawShell.Entries()[0] != "Bash" {
		t.Fatal("Entries exposes the shared list")
	}
}

func TestSentinelsAreOnlyInstalledByTheirOwnList(t *testing.T) {
	for sentinel, list := range map[string]DenyList{
		NetworkDenialSentinel:  DenyNetworkTools,
		RawShellSentinel:       DenyRawShell,
		ShellAuthoritySentinel: DenyVerificationSurface,
	} {
		for _, d := range AllDenyLists {
			has := slices.Contains(d.Entries(), sentinel)
			if has != (d == list) {
				t.Errorf("sentinel %q in %s = %v", sentinel, d, has)
			}
		}
	}
	// The web globs deliberately do not match fetch_url, so it is spelled out.
	for _, glob := range []string{"web_*", "web.*"} {
		if MatchDeny(glob, NetworkDenialSentinel) {
			t.Errorf("%s matches %s", glob, NetworkDenialSentinel)
		}
	}
}

func TestMatchDenyGlobsAndCase(t *testing.T) {
	for _, tc := range []struct {
		rule, name string
		want       bool
	}{
		{"mcp*", "mcp__github__create_issue", true},
		{"mcp*", "MCP__x", true},
		{"mcp*", "mcp", true},
		{"mcp*", "mc", false},
		{"mcp*", "xmcp", false},
		{"web_*", "web_anything", true},
		{"web_*", "WEB_SEARCH", true},
		{"web_*", "Web", false},
		{"web.*", "web.run", true},
		{"web.*", "web", false},
		{"terminal/*", "terminal/run", true},
		{"terminal/*", "Terminal/Send", true},
		{"terminal/*", "terminal", false},
		{"Bash", "bash", true},
		{"Bash", "BASH", true},
		{"Bash", " Bash ", true},
		{"Bash", "Bash2", false},
		{"Bash", "bas", false},
		{"fetch_url", "FETCH_URL", true},
		{"run_tests", "run_tests_all", false},
		{"write_file", "write_fil\u212A", false}, // no Unicode folding
		{"a*b", "a*b", true},                     // only a trailing * is a glob
		{"a*b", "axb", false},
		{"*", "anything", true},
	} {
		if got := MatchDeny(tc.rule, tc.name); got != tc.want {
			t.Errorf("MatchDeny(%q, %q) = %v", tc.rule, tc.name, got)
		}
	}
}

func surfaceNames(a Authority, names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = a.IsToolAllowed(n)
	}
	return out
}

func TestNetworkDenialRemovesEveryNetworkSpelling(t *testing.T) {
	a := ClampAuthority(DefaultSession(), Ceiling{Write: true, Shell: ShellFull, Tools: true})
	for _, n := range []string{"web.run", "web_search", "WEB_FETCH", "web_anything", "web.other", "fetch_url",
		"wait_for_dev_server", "browse", "browser", "github", "finance", "rlm_open", "rlm_eval",
		"mcp__remote__tool", "mcp", "start_mcp_server", "list_mcp_resources", "read_mcp_resource"} {
		if a.IsToolAllowed(n) {
			t.Errorf("network=false still allows %q", n)
		}
	}
	// The Web family name and local tools stay.
	for _, n := range []string{"Web", "read_file", "Bash", "write_file", "run_tests"} {
		if !a.IsToolAllowed(n) {
			t.Errorf("network=false removed %q", n)
		}
	}
}

func TestWriteDeniedVerifierKeepsChecksButNotRawShell(t *testing.T) {
	// write=false, shell=full: the test preset.
	a := ClampAuthority(Ceiling{Network: true, Shell: ShellFull, Tools: true}, DefaultSession())
	got := surfaceNames(a, "Run", "run_tests", "run_verifiers", "Bash", "exec_shell", "terminal/run",
		"write_file", "apply_patch", "rlm_eval", "task_gate_run", "automation_run", "start_mcp_server", "read_file")
	want := map[string]bool{"Run": true, "run_tests": true, "run_verifiers": true, "Bash": false, "exec_shell": false,
		"terminal/run": false, "write_file": false, "apply_patch": false, "rlm_eval": false, "task_gate_run": false,
		"automation_run": false, "start_mcp_server": false, "read_file": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if a.PostureRole != RoleTest || a.WriteAuthority != WriteAuthorityReadOnly {
		t.Fatalf("posture %s, write %s", a.PostureRole, a.WriteAuthority)
	}
}

// The seed's repair: write=true with shell=none must lose the raw shell,
// keyed on the shell field and not only on write.
func TestWriteWithoutFullShellLosesRawShell(t *testing.T) {
	for _, sh := range []Shell{ShellNone, ShellReadOnly} {
		a := ClampAuthority(Ceiling{Network: true, Write: true, Shell: sh, Tools: true}, DefaultSession())
		for _, n := range []string{RawShellSentinel, "Bash", ShellAuthoritySentinel, "Run"} {
			if a.IsToolAllowed(n) {
				t.Errorf("write=true,shell=%s allows %q", sh, n)
			}
		}
		for _, n := range []string{"write_file", "task_gate_run"} {
			if !a.IsToolAllowed(n) {
				t.Errorf("write=true,shell=%s removed %q", sh, n)
			}
		}
	}
	full := ClampAuthority(DefaultSession(), DefaultSession())
	if len(full.DisallowedTools) != 0 || full.AllowedTools != nil {
		t.Fatalf("the full ceiling denies %v / allows %v", full.DisallowedTools, full.AllowedTools)
	}
}

func TestActiveDenyListsFollowTheRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCeiling().Draw(t, "c")
		active := ActiveDenyLists(c)
		want := map[DenyList]bool{
			DenyNetworkTools:        !c.Network,
			DenyRawShell:            !(c.Write && c.Shell == ShellFull),
			DenyVerificationSurface: c.Shell != ShellFull,
			DenyMutatingTools:       !c.Write,
			DenyNonShellExecution:   !c.Write,
		}
		for _, d := range AllDenyLists {
			if slices.Contains(active, d) != want[d] {
				t.Fatalf("%v: %s active=%v", c, d, !want[d])
			}
		}
		a := ClampAuthority(c, DefaultSession())
		// Sentinels read the posture back off the list.
		if slices.Contains(a.DisallowedTools, NetworkDenialSentinel) != !c.Network {
			t.Fatal("network sentinel disagrees with the ceiling")
		}
		if slices.Contains(a.DisallowedTools, RawShellSentinel) != !(c.Write && c.Shell == ShellFull) {
			t.Fatal("raw shell sentinel disagrees with the ceiling")
		}
		if slices.Contains(a.DisallowedTools, ShellAuthoritySentinel) != (c.Shell != ShellFull) {
			t.Fatal("shell authority sentinel disagrees with the ceiling")
		}
		if !slices.IsSorted(a.DisallowedTools) || len(slices.Compact(slices.Clone(a.DisallowedTools))) != len(a.DisallowedTools) {
			t.Fatal("deny list not sorted and de-duplicated")
		}
		for _, rule := range a.DisallowedTools {
			if !isPostureDenial(rule) {
				t.Fatalf("%q is not a posture denial", rule)
			}
		}
	})
}

func TestToolsFalseMeansNoTools(t *testing.T) {
	a := ClampAuthority(DefaultSession(), Ceiling{Network: true, Write: true, Shell: ShellFull})
	if a.AllowedTools == nil || len(a.AllowedTools) != 0 {
		t.Fatalf("AllowedTools = %#v, want empty non-nil", a.AllowedTools)
	}
	for _, n := range []string{"read_file", "Read", "Web", "anything"} {
		if a.IsToolAllowed(n) {
			t.Errorf("tools=false allows %q", n)
		}
	}
	if a.PostureRole != RoleExplore {
		t.Errorf("posture %s", a.PostureRole)
	}
	if !strings.Contains(a.Fingerprint(), ";allow=none;") {
		t.Errorf("fingerprint %s", a.Fingerprint())
	}
	if b := ClampAuthority(DefaultSession(), DefaultSession()); !strings.Contains(b.Fingerprint(), ";allow=inherit;") {
		t.Errorf("fingerprint %s", b.Fingerprint())
	}
}

func TestPostureRoleFor(t *testing.T) {
	for _, tc := range []struct {
		c    Ceiling
		want Role
	}{
		{Ceiling{Tools: false, Write: true, Shell: ShellFull}, RoleExplore},
		{Ceiling{Tools: true, Write: true, Shell: ShellNone}, RoleImplement},
		{Ceiling{Tools: true, Write: false, Shell: ShellFull}, RoleTest},
		{Ceiling{Tools: true, Write: false, Shell: ShellReadOnly}, RoleExplore},
		{Ceiling{Tools: true, Write: false, Shell: ShellNone}, RoleExplore},
	} {
		if got := PostureRoleFor(tc.c); got != tc.want {
			t.Errorf("PostureRoleFor(%v) = %s, want %s", tc.c, got, tc.want)
		}
		if got := ClampAuthority(tc.c, DefaultSession()).PostureRole; got != tc.want {
			t.Errorf("ClampAuthority posture %s, want %s", got, tc.want)
		}
	}
}

func TestWriteAuthorityFollowsTheClampedWrite(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := ClampAuthority(genCeiling().Draw(t, "r"), genCeiling().Draw(t, "s"))
		want := WriteAuthorityReadOnly
		if a.Ceiling.Write {
			want = WriteAuthorityWorkspace
		}
		if a.WriteAuthority != want {
			t.Fatalf("%v: %s", a.Ceiling, a.WriteAuthority)
		}
	})
}

func TestReadOnlyRolesKeepCanonicalBashUnlessShellIsNone(t *testing.T) {
	for _, r := range AllRoles {
		a := AuthorityForRole(string(r), DefaultSession())
		if a.PostureRole != r {
			t.Errorf("%s: posture %s", r, a.PostureRole)
		}
		keeps := RequiresReadOnlyShell(r)
		if a.IsToolAllowed("Bash") != (keeps || a.Ceiling.Write && a.Ceiling.Shell == ShellFull) {
			t.Errorf("%s: Bash allowed = %v", r, a.IsToolAllowed("Bash"))
		}
		if keeps {
			// Every other shell alias stays denied.
			for _, n := range DenyRawShell.Entries() {
				if n != "Bash" && !a.IsToolDenied(n) {
					t.Errorf("%s: %q not denied", r, n)
				}
			}
			if !a.IsToolAllowed("bash") || !a.IsToolAllowed("BASH") {
				t.Errorf("%s: the exception is not case-insensitive", r)
			}
		}
		// With no shell authority, nobody keeps Bash.
		none := AuthorityForRole(string(r), Ceiling{Network: true, Write: true, Shell: ShellNone, Tools: true, DelegationDepth: 1})
		if none.IsToolAllowed("Bash") {
			t.Errorf("%s under shell=none keeps Bash", r)
		}
	}
	// The test role (shell=full, write=false) loses Bash: no exception.
	if AuthorityForRole("test", DefaultSession()).IsToolAllowed("Bash") {
		t.Error("test keeps raw Bash")
	}
}

func TestAuthorityForRoleIsTheClampOfTheRequest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genCeiling().Draw(t, "session")
		r := rapid.SampledFrom(AllRoles).Draw(t, "role")
		a := AuthorityForRole(string(r), s)
		if a.Ceiling != RequestedCeiling(r, s).Clamp(s) || !a.Ceiling.Within(s) {
			t.Fatalf("%s in %v: %v", r, s, a.Ceiling)
		}
		if r == RoleCustom && (a.Ceiling.Network != s.Network || a.Ceiling.Write != s.Write || a.Ceiling.Shell != s.Shell || a.Ceiling.Tools != s.Tools) {
			t.Fatalf("custom does not inherit the session: %v vs %v", a.Ceiling, s)
		}
		// An unknown name gets exactly explore's authority.
		if !reflect.DeepEqual(AuthorityForRole("auditor", s), AuthorityForRole("explore", s)) {
			t.Fatal("unknown role differs from explore")
		}
	})
}

func TestFingerprintFormat(t *testing.T) {
	a := AuthorityForRole("reviewer", DefaultSession())
	want := "v1;posture=reviewer;write=read_only;depth=0;tools=true;network=false;shell=read_only;allow=inherit;deny=" +
		strings.Join(a.DisallowedTools, ",")
	if a.Fingerprint() != want {
		t.Fatalf("got  %s\nwant %s", a.Fingerprint(), want)
	}
	g := AuthorityForRole("general", Ceiling{Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 3})
	if got := g.Fingerprint(); got != "v1;posture=general;write=workspace_write;depth=2;tools=true;network=true;shell=full;allow=inherit;deny=" {
		t.Fatalf("general fingerprint %s", got)
	}
	explicit := Authority{Ceiling: DefaultSession(), AllowedTools: []string{"b", "a", "b", "Z"},
		DisallowedTools: []string{"y", "x", "y"}, WriteAuthority: WriteAuthorityWorkspace, PostureRole: RoleCustom}
	if got := explicit.Fingerprint(); got != "v1;posture=custom;write=workspace_write;depth=1;tools=true;network=true;shell=full;allow=Z,a,b;deny=x,y" {
		t.Fatalf("explicit fingerprint %s", got)
	}
}

func TestFingerprintIgnoresInputOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(rapid.StringMatching(`[A-Za-z_*./]{0,8}`))
		allow, deny := names.Draw(t, "allow"), names.Draw(t, "deny")
		a := Authority{Ceiling: genCeiling().Draw(t, "c"), AllowedTools: allow, DisallowedTools: deny,
			WriteAuthority: rapid.SampledFrom(AllWriteAuthorities).Draw(t, "w"), PostureRole: rapid.SampledFrom(AllRoles).Draw(t, "p")}
		if len(allow) == 0 {
			a.AllowedTools = nil
		}
		b := a
		b.AllowedTools = slices.Clone(a.AllowedTools)
		b.DisallowedTools = slices.Clone(deny)
		perm := func(s []string) {
			for i := len(s) - 1; i > 0; i-- {
				j := rapid.IntRange(0, i).Draw(t, "j")
				s[i], s[j] = s[j], s[i]
			}
		}
		perm(b.AllowedTools)
		perm(b.DisallowedTools)
		// Duplicating an entry changes nothing either.
		if len(deny) > 0 {
			b.DisallowedTools = append(b.DisallowedTools, deny[0])
		}
		if a.Fingerprint() != b.Fingerprint() {
			t.Fatalf("%s\n%s", a.Fingerprint(), b.Fingerprint())
		}
	})
}

func TestFingerprintSeparatesDifferentAuthorities(t *testing.T) {
	seen := map[string]Ceiling{}
	for _, r := range AllRoles {
		for _, c := range allSmallCeilings() {
			a := AuthorityForRole(string(r), c)
			fp := a.Fingerprint()
			if prev, ok := seen[fp]; ok && prev != a.Ceiling {
				t.Fatalf("%s shared by %v and %v", fp, prev, a.Ceiling)
			}
			seen[fp] = a.Ceiling
		}
	}
}

func allSmallCeilings() []Ceiling {
	var out []Ceiling
	for _, n := range []bool{false, true} {
		for _, w := range []bool{false, true} {
			for _, s := range AllShells {
				for _, tl := range []bool{false, true} {
					for d := uint32(0); d < 3; d++ {
						out = append(out, Ceiling{n, w, s, tl, d})
					}
				}
			}
		}
	}
	return out
}

func TestDenyWinsOverAllowForEveryEntry(t *testing.T) {
	for _, d := range AllDenyLists {
		for _, entry := range d.Entries() {
			names := []string{entry, strings.ToUpper(entry), strings.ToLower(entry)}
			if p, ok := strings.CutSuffix(entry, "*"); ok {
				names = append(names, p, p+"x", strings.ToUpper(p)+"__tool")
			}
			a := Authority{AllowedTools: names, DisallowedTools: []string{entry}}
			for _, n := range names {
				if a.IsToolAllowed(n) {
					t.Errorf("%s: allow list %v beats deny %q for %q", d, names, entry, n)
				}
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		// Any authority from any role/session: a denied name is never allowed,
		// whatever the allow list holds.
		a := AuthorityForRole(string(rapid.SampledFrom(AllRoles).Draw(t, "role")), genCeiling().Draw(t, "s"))
		if len(a.DisallowedTools) == 0 {
			return
		}
		entry := rapid.SampledFrom(a.DisallowedTools).Draw(t, "entry")
		name := strings.TrimSuffix(entry, "*") + rapid.StringMatching(`[a-z_]{0,4}`).Draw(t, "suffix")
		if !strings.HasSuffix(entry, "*") {
			name = entry
		}
		a.AllowedTools = append(a.AllowedTools, name)
		if a.IsToolAllowed(name) {
			t.Fatalf("%q allowed despite deny %q", name, entry)
		}
	})
}

func TestAllowListIsExact(t *testing.T) {
	a := Authority{AllowedTools: []string{"read_file"}}
	if !a.IsToolAllowed("read_file") || a.IsToolAllowed("Read_File") || a.IsToolAllowed("write_file") {
		t.Fatal("allow list matching is not exact")
	}
}

// TestEqualFoldASCIIFoldsOnlyASCII: ASCII letters fold; no other byte or
// rune does (KELVIN SIGN is not "k", dotted capital I is not "i").
func TestEqualFoldASCIIFoldsOnlyASCII(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"Bash", "bash", true}, {"ENFORCERD.IO/", "enforcerd.io/", true}, {"", "", true},
		{"bash", "bash ", false}, {"\u212Aey", "key", false}, {"\u0130d", "id", false},
		{"straße", "STRASSE", false}, {"é", "É", false}, {"@", "`", false}, {"[", "{", false},
	} {
		if got := EqualFoldASCII(tc.a, tc.b); got != tc.want {
			t.Errorf("EqualFoldASCII(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
