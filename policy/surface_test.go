package policy

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// mustRole is LookupRole for a name the test knows to be valid.
func mustRole(name string) Resolution {
	res, err := LookupRole(name)
	if err != nil {
		panic(err)
	}
	return res
}

func TestSurfaceJSONFieldsAreStable(t *testing.T) {
	b, err := json.Marshal(ResolveSurface(mustRole("explore"), DefaultSession(), ""))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"allowed_tools", "builtin_tools", "ceiling", "disallowed_tools", "fingerprint", "kernel", "label",
		"mcp_allowed_tools", "posture_role", "role", "subagent_builtin_tools", "warnings", "write_authority"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v", keys)
	}
	if string(m["allowed_tools"]) != "null" || string(m["warnings"]) != "[]" {
		t.Fatalf("allowed_tools %s warnings %s", m["allowed_tools"], m["warnings"])
	}
	if string(m["ceiling"]) != `{"network":true,"write":false,"shell":"read_only","tools":true,"delegation_depth":0}` {
		t.Fatalf("ceiling %s", m["ceiling"])
	}
	if string(m["kernel"]) != `{"network":true,"write":false,"shell":"read_only"}` {
		t.Fatalf("kernel %s", m["kernel"])
	}
	none, _ := json.Marshal(ResolveSurface(mustRole("general"), Ceiling{Network: true, Write: true, Shell: ShellFull}, ""))
	if !strings.Contains(string(none), `"allowed_tools":[]`) {
		t.Fatalf("tools=false: %s", none)
	}
}

func TestSurfaceDefaultGeneral(t *testing.T) {
	s := ResolveSurface(UnspecifiedRole(), DefaultSession(), "")
	if s.Role != RoleGeneral || s.Label != "general" || s.PostureRole != RoleGeneral || s.Ceiling != (Ceiling{true, true, ShellFull, true, 0}) {
		t.Fatalf("%+v", s)
	}
	if len(s.DisallowedTools) != 0 || s.AllowedTools != nil || s.WriteAuthority != WriteAuthorityWorkspace {
		t.Fatalf("%+v", s)
	}
	if !slices.Equal(s.BuiltinTools, BaseBuiltinTools()) || !slices.Equal(s.SubagentBuiltinTools, append(BaseBuiltinTools(), "Bash")) {
		t.Fatalf("%v %v", s.BuiltinTools, s.SubagentBuiltinTools)
	}
	if !slices.Equal(s.MCPAllowedTools, MCPAllowedToolsFor(AgentDefaultGroups())) {
		t.Fatal(s.MCPAllowedTools)
	}
	if s.Kernel != (KernelCeiling{true, true, ShellFull}) {
		t.Fatal(s.Kernel)
	}
}

// A recorded name ResolveRole does not know (a registration an older
// enforcerd accepted) keeps explore's posture and says so.
func TestSurfaceWarnsAboutUnknownGroupsAndRoles(t *testing.T) {
	s := ResolveSurface(ResolveRole("Auditor"), DefaultSession(), "messaging,bogus")
	if s.Role != RoleExplore || s.Label != "Auditor" || len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0], `"bogus"`) {
		t.Fatalf("%+v", s)
	}
	s = ResolveSurface(mustRole("general"), Ceiling{Network: true, Write: true, Shell: ShellFull}, "")
	if len(s.BuiltinTools) != 0 || len(s.SubagentBuiltinTools) != 0 || len(s.MCPAllowedTools) != 0 || len(s.Warnings) != 1 {
		t.Fatalf("tools=false: %+v", s)
	}
}

// The surface's lists never contain a tool its own authority refuses, and
// the kernel ceiling is the surface ceiling: they cannot disagree.
func TestSurfaceAgreesWithItsAuthority(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		role := rapid.OneOf(rapid.SampledFrom(AllRoles).AsAny(), rapid.String().AsAny()).Draw(t, "role")
		name := ""
		switch r := role.(type) {
		case Role:
			name = string(r)
		case string:
			name = r
		}
		session := genCeiling().Draw(t, "session")
		groups := rapid.SliceOf(rapid.SampledFrom(AllToolGroups)).Draw(t, "groups")
		s := SurfaceFor(ResolveRole(name), session, groups)
		a := AuthorityForRole(name, session)
		if s.Fingerprint != a.Fingerprint() || s.Ceiling != a.Ceiling || s.Kernel != a.Ceiling.Kernel() || !s.Ceiling.Within(session) {
			t.Fatalf("surface and authority disagree: %+v", s)
		}
		for _, list := range [][]string{s.BuiltinTools, s.SubagentBuiltinTools, s.MCPAllowedTools} {
			for _, tool := range list {
				if !a.IsToolAllowed(tool) {
					t.Fatalf("%q listed but not allowed", tool)
				}
			}
		}
		if !s.Ceiling.Network && len(s.MCPAllowedTools) != 0 {
			t.Fatal("network=false keeps MCP tools")
		}
		if session.Tools && s.Ceiling.Tools && len(s.BuiltinTools) == 0 {
			t.Fatal("empty --tools list with tools=true")
		}
		if !slices.IsSorted(s.DisallowedTools) {
			t.Fatal("deny list unsorted")
		}
	})
}

// kernelRefuses is the kernel ceiling's rule for tools, written out
// independently of KernelDeniesTool: with write=false no file-writing
// built-in works, with shell=none neither Bash nor the bash MCP server's
// tools do.
func kernelRefuses(k KernelCeiling, tool string) bool {
	switch {
	case !k.Write && slices.Contains([]string{"Write", "Edit", "MultiEdit", "NotebookEdit"}, tool):
		return true
	case k.Shell == ShellNone && (tool == "Bash" || strings.HasPrefix(tool, "mcp__bash__")):
		return true
	}
	return false
}

// TestSurfaceNeverListsAToolTheKernelRefuses: for every role, every session
// ceiling (network, write, tools, each shell; two depths, which no list
// depends on) and every subset of the tool groups, no list of the surface
// holds a tool its kernel ceiling makes fail, and none holds one its
// authority denies.
func TestSurfaceNeverListsAToolTheKernelRefuses(t *testing.T) {
	var sessions []Ceiling
	for _, network := range []bool{false, true} {
		for _, write := range []bool{false, true} {
			for _, shell := range AllShells {
				for _, tools := range []bool{false, true} {
					for _, depth := range []uint32{0, 2} {
						sessions = append(sessions, Ceiling{Network: network, Write: write, Shell: shell, Tools: tools, DelegationDepth: depth})
					}
				}
			}
		}
	}
	subsets := make([][]ToolGroup, 0, 1<<len(AllToolGroups))
	for mask := 0; mask < 1<<len(AllToolGroups); mask++ {
		var groups []ToolGroup
		for i, g := range AllToolGroups {
			if mask&(1<<i) != 0 {
				groups = append(groups, g)
			}
		}
		subsets = append(subsets, groups)
	}
	for _, r := range AllRoles {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			res := mustRole(string(r))
			for _, session := range sessions {
				a := AuthorityFor(r, session)
				for _, groups := range subsets {
					s := SurfaceFor(res, session, groups)
					if s.Kernel != s.Ceiling.Kernel() || s.Ceiling != a.Ceiling {
						t.Fatalf("in %v: kernel %v, ceiling %v", session, s.Kernel, s.Ceiling)
					}
					for i, list := range [][]string{s.BuiltinTools, s.SubagentBuiltinTools, s.MCPAllowedTools} {
						name := []string{"builtin_tools", "subagent_builtin_tools", "mcp_allowed_tools"}[i]
						for _, tool := range list {
							if kernelRefuses(s.Kernel, tool) || KernelDeniesTool(s.Kernel, tool) {
								t.Fatalf("in %v with %v: %s lists %q, which kernel %v refuses", session, groups, name, tool, s.Kernel)
							}
							if !a.IsToolAllowed(tool) {
								t.Fatalf("in %v with %v: %s lists %q, which the authority denies", session, groups, name, tool)
							}
						}
					}
				}
			}
		})
	}
}

// The filter takes away only what the kernel refuses: the other tools of
// seed 000's resolution stay, so the rule is not satisfied by emptying
// the lists.
func TestKernelFilterKeepsEverythingElse(t *testing.T) {
	full := Ceiling{Network: true, Write: true, Shell: ShellFull, Tools: true, DelegationDepth: 1}
	groups := []ToolGroup{GroupMessaging, GroupExecution, GroupWebTools}
	general := SurfaceFor(mustRole("general"), full, groups)
	if !slices.Equal(general.BuiltinTools, BuiltinToolsFor(groups)) || !slices.Equal(general.SubagentBuiltinTools, SubagentBuiltinToolsFor(groups)) ||
		!slices.Equal(general.MCPAllowedTools, MCPAllowedToolsFor(groups)) {
		t.Fatalf("general under a full session lost tools: %+v", general)
	}
	for _, tc := range []struct {
		role             string
		session          Ceiling
		builtin, subagnt []string
	}{
		// reviewer: write=false, shell=read_only: the editors go, Bash stays
		// (and network=false takes every MCP tool).
		{"reviewer", full, []string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch"},
			[]string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch", "Bash"}},
		// advisor: write=false, shell=none.
		{"advisor", full, []string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch"},
			[]string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch"}},
		// custom under write=true,shell=none: the editors stay, Bash goes.
		{"custom", Ceiling{Network: true, Write: true, Shell: ShellNone, Tools: true}, []string{"Edit", "Glob", "Grep", "Read", "Skill", "Write", "WebFetch", "WebSearch"},
			[]string{"Edit", "Glob", "Grep", "Read", "Skill", "Write", "WebFetch", "WebSearch"}},
		// general under write=false,shell=read_only: no editors, and no Bash
		// either (the raw shell needs write and a full shell).
		{"general", Ceiling{Network: true, Shell: ShellReadOnly, Tools: true}, []string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch"},
			[]string{"Glob", "Grep", "Read", "Skill", "WebFetch", "WebSearch"}},
	} {
		s := SurfaceFor(mustRole(tc.role), tc.session, groups)
		if !slices.Equal(s.BuiltinTools, tc.builtin) || !slices.Equal(s.SubagentBuiltinTools, tc.subagnt) {
			t.Errorf("%s in %v: builtin %v, subagent %v", tc.role, tc.session, s.BuiltinTools, s.SubagentBuiltinTools)
		}
		if wantMCP := MCPAllowedToolsFor(groups); !s.Ceiling.Network && len(s.MCPAllowedTools) != 0 || s.Ceiling.Network && !slices.Equal(s.MCPAllowedTools, wantMCP) {
			t.Errorf("%s in %v: mcp %v", tc.role, tc.session, s.MCPAllowedTools)
		}
	}
}

func TestKernelDeniesTool(t *testing.T) {
	open := KernelCeiling{Network: true, Write: true, Shell: ShellFull}
	for _, tool := range append(BuiltinToolsFor(AllToolGroups), "Bash", "MultiEdit", "NotebookEdit", "mcp__bash__run", MCPServerPrefix+"send") {
		if KernelDeniesTool(open, tool) {
			t.Errorf("open kernel ceiling denies %q", tool)
		}
	}
	for k, denied := range map[KernelCeiling][]string{
		{Network: true, Shell: ShellFull}:                  {"Write", "Edit", "MultiEdit", "NotebookEdit", "edit", " WRITE "},
		{Network: true, Write: true, Shell: ShellNone}:     {"Bash", "bash", "mcp__bash__run", "mcp__bash__status", "mcp__bash__kill", "MCP__BASH__run"},
		{Network: true, Write: true, Shell: "not-a-shell"}: {"Bash", "mcp__bash__run"},
	} {
		for _, tool := range denied {
			if !KernelDeniesTool(k, tool) {
				t.Errorf("%v does not deny %q", k, tool)
			}
		}
	}
	// read_only keeps Bash; network=false is not a kernel rule for tools.
	for _, k := range []KernelCeiling{{Network: true, Write: false, Shell: ShellReadOnly}, {Write: true, Shell: ShellReadOnly}} {
		for _, tool := range []string{"Bash", "mcp__bash__run", "Read", "Grep", "WebFetch"} {
			if KernelDeniesTool(k, tool) {
				t.Errorf("%v denies %q", k, tool)
			}
		}
	}
	// The surface's filter applies the rule to any list, the MCP one
	// included.
	noShell := AuthorityFor(RoleCustom, Ceiling{Network: true, Write: true, Shell: ShellNone, Tools: true})
	if got := surfaceTools(noShell, []string{"mcp__bash__run", MCPServerPrefix + "send", "mcp__bash__kill", "Bash", "Edit"}); !slices.Equal(got, []string{MCPServerPrefix + "send", "Edit"}) {
		t.Errorf("shell=none keeps %v", got)
	}
	// Names that only look alike are not refused by this rule.
	for _, tool := range []string{"Writer", "Editor", "mcp__bashful__run", "B\u0430sh"} {
		if KernelDeniesTool(KernelCeiling{Shell: ShellNone}, tool) {
			t.Errorf("denies look-alike %q", tool)
		}
	}
}
