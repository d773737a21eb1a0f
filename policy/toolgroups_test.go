package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseToolGroupsAcceptsTheWireNames(t *testing.T) {
	got, warns := ParseToolGroups("messaging, Meta ,web_tools")
	if !reflect.DeepEqual(got, []ToolGroup{GroupMessaging, GroupMeta, GroupWebTools}) || warns != nil {
		t.Fatalf("got %v %v", got, warns)
	}
	for _, g := range AllToolGroups {
		if got, _ := ParseToolGroups(string(g)); !reflect.DeepEqual(got, []ToolGroup{g}) {
			t.Errorf("ParseToolGroups(%q) = %v", g, got)
		}
	}
	// Order is kept and repeats are not collapsed (as the seed).
	if got, _ := ParseToolGroups("inbox,messaging,inbox"); !reflect.DeepEqual(got, []ToolGroup{GroupInbox, GroupMessaging, GroupInbox}) {
		t.Errorf("got %v", got)
	}
}

func TestParseToolGroupsFallsBackToTheAgentDefault(t *testing.T) {
	for _, raw := range []string{"", "   ", ",,", "not_a_group,also_not"} {
		got, warns := ParseToolGroups(raw)
		if !reflect.DeepEqual(got, AgentDefaultGroups()) {
			t.Errorf("ParseToolGroups(%q) = %v", raw, got)
		}
		if wantWarn := strings.TrimSpace(raw) != ""; (len(warns) > 0) != wantWarn {
			t.Errorf("ParseToolGroups(%q) warnings %v", raw, warns)
		}
	}
	got, warns := ParseToolGroups("messaging,bogus,Execution")
	if !reflect.DeepEqual(got, []ToolGroup{GroupMessaging, GroupExecution}) || len(warns) != 1 || !strings.Contains(warns[0], `"bogus"`) {
		t.Fatalf("got %v %v", got, warns)
	}
	if got := AgentDefaultGroups(); !reflect.DeepEqual(got, []ToolGroup{GroupMessaging, GroupMeta, GroupInbox, GroupExecution}) {
		t.Fatalf("AgentDefaultGroups = %v", got)
	}
}

func TestBuiltinToolsAreTheBaseSetPlusWhatGroupsAdd(t *testing.T) {
	base := BaseBuiltinTools()
	if !reflect.DeepEqual(base, []string{"Edit", "Glob", "Grep", "Read", "Skill", "Write"}) {
		t.Fatalf("base = %v", base)
	}
	if !reflect.DeepEqual(BuiltinToolsFor(nil), base) || !reflect.DeepEqual(BuiltinToolsFor(AgentDefaultGroups()), base) {
		t.Fatal("no groups / default groups must resolve to exactly the base set")
	}
	rapid.Check(t, func(t *rapid.T) {
		groups := rapid.SliceOf(rapid.SampledFrom(AllToolGroups)).Draw(t, "groups")
		got := BuiltinToolsFor(groups)
		if !slices.Equal(got[:len(base)], base) {
			t.Fatalf("%v dropped or reordered the base set: %v", groups, got)
		}
		if len(got) == 0 || slices.Contains(got, "Bash") {
			t.Fatalf("%v: %v", groups, got)
		}
		for _, tool := range got {
			if strings.Contains(tool, "__") {
				t.Fatalf("%q looks like an MCP tool", tool)
			}
		}
		if len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("repeats: %v", got)
		}
		sub := SubagentBuiltinToolsFor(groups)
		if slices.Contains(sub, "Bash") != slices.Contains(groups, GroupExecution) {
			t.Fatalf("%v: subagent Bash = %v", groups, slices.Contains(sub, "Bash"))
		}
		hasWeb := slices.Contains(groups, GroupWebTools)
		if slices.Contains(got, "WebFetch") != hasWeb || slices.Contains(got, "WebSearch") != hasWeb {
			t.Fatalf("%v: web egress %v", groups, got)
		}
	})
}

func TestWebEgressOnlyWithWebTools(t *testing.T) {
	with := BuiltinToolsFor([]ToolGroup{GroupWebTools})
	if !slices.Contains(with, "WebFetch") || !slices.Contains(with, "WebSearch") {
		t.Fatal(with)
	}
	without := BuiltinToolsFor(ManagerDefaultGroups())
	if slices.Contains(without, "WebFetch") || slices.Contains(without, "WebSearch") {
		t.Fatal(without)
	}
}

func TestSubagentBashOnlyWithExecution(t *testing.T) {
	if !slices.Contains(SubagentBuiltinToolsFor([]ToolGroup{GroupExecution}), "Bash") {
		t.Fatal("execution parent: subagent lacks Bash")
	}
	for _, groups := range [][]ToolGroup{nil, {GroupMessaging, GroupWebTools}} {
		if slices.Contains(SubagentBuiltinToolsFor(groups), "Bash") {
			t.Fatalf("%v grants subagent Bash", groups)
		}
	}
	for _, groups := range [][]ToolGroup{nil, {GroupExecution}, AllToolGroups} {
		if slices.Contains(BuiltinToolsFor(groups), "Bash") {
			t.Fatalf("%v grants the parent Bash", groups)
		}
	}
}

func TestGroupTools(t *testing.T) {
	want := map[ToolGroup][]string{
		GroupMessaging:  {"send", "recv", "ack_until"},
		GroupMeta:       {"get_agent_meta"},
		GroupInbox:      {"get_loose_ends", "cancel_loose_end", "remind"},
		GroupScheduling: {"request_schedule_prompt", "fire_schedule_now", "cancel_schedule", "edit_schedule", "list_schedules"},
		GroupForge:      {"create_repo"},
	}
	for _, g := range AllToolGroups {
		if !slices.Equal(g.Tools(), want[g]) {
			t.Errorf("%s.Tools() = %v", g, g.Tools())
		}
		if (len(g.BuiltinTools()) > 0) != (g == GroupWebTools) {
			t.Errorf("%s.BuiltinTools() = %v", g, g.BuiltinTools())
		}
	}
	if !reflect.DeepEqual(AlwaysOnMCPTools(), []string{"set_status", "compact", "mark_todos_done"}) {
		t.Fatal(AlwaysOnMCPTools())
	}
	got := MCPAllowedToolsFor([]ToolGroup{GroupMeta, GroupMeta, GroupExecution})
	want2 := []string{"mcp__hyperhive__set_status", "mcp__hyperhive__compact", "mcp__hyperhive__mark_todos_done", "mcp__hyperhive__get_agent_meta"}
	if !slices.Equal(got, want2) {
		t.Fatalf("MCPAllowedToolsFor = %v", got)
	}
	// Always-on tools are present whatever the groups.
	for _, groups := range [][]ToolGroup{nil, AllToolGroups} {
		for _, t2 := range AlwaysOnMCPTools() {
			if !slices.Contains(MCPAllowedToolsFor(groups), MCPServerPrefix+t2) {
				t.Errorf("%v lacks %s", groups, t2)
			}
		}
	}
}

func TestAgentCapabilityParse(t *testing.T) {
	if c, ok := ParseAgentCapability("manage_root_agent"); !ok || c != CapManageRootAgent {
		t.Fatal("manage_root_agent does not parse")
	}
	for _, s := range []string{"", "manage-root-agent", "Manage_Root_Agent", "root"} {
		if _, ok := ParseAgentCapability(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}
