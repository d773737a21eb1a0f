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
