package policy

import (
	"fmt"
	"slices"
	"strings"
)

// ToolGroup is a named group of tools an agent may be granted (seed 000).
// Its string is the snake_case wire name used in the tool-group list.
type ToolGroup string

// The closed tool-group vocabulary, in seed 000's stable order.
const (
	GroupMessaging  ToolGroup = "messaging"  // send, recv, ack_until
	GroupMeta       ToolGroup = "meta"       // get_agent_meta
	GroupInbox      ToolGroup = "inbox"      // get_loose_ends, cancel_loose_end, remind
	GroupLifecycle  ToolGroup = "lifecycle"  // no tools (its only tool was removed); kept so grants parse
	GroupApprovals  ToolGroup = "approvals"  // no tools; still a server-side gate
	GroupScheduling ToolGroup = "scheduling" // scheduled prompts (privileged)
	GroupForge      ToolGroup = "forge"      // create_repo
	GroupExecution  ToolGroup = "execution"  // the out-of-process bash MCP server; subagent built-in Bash
	GroupWebTools   ToolGroup = "web_tools"  // built-in WebFetch, WebSearch
)

// AllToolGroups lists every ToolGroup in stable order.
var AllToolGroups = []ToolGroup{
	GroupMessaging, GroupMeta, GroupInbox, GroupLifecycle, GroupApprovals,
	GroupScheduling, GroupForge, GroupExecution, GroupWebTools,
}

// AgentDefaultGroups returns the groups an agent gets when its list is
// absent, blank, or names nothing known: messaging, meta, inbox, execution.
func AgentDefaultGroups() []ToolGroup {
	return []ToolGroup{GroupMessaging, GroupMeta, GroupInbox, GroupExecution}
}

// ManagerDefaultGroups returns the preset for a fully privileged agent
// (every group but forge and web_tools, as seed 000 defines it).
func ManagerDefaultGroups() []ToolGroup {
	return []ToolGroup{GroupMessaging, GroupMeta, GroupInbox, GroupLifecycle, GroupApprovals, GroupScheduling, GroupExecution}
}

// Valid reports whether g is one of AllToolGroups.
func (g ToolGroup) Valid() bool { return slices.Contains(AllToolGroups, g) }

// ParseToolGroup parses one group name, trimmed and ASCII-lowercased.
func ParseToolGroup(s string) (ToolGroup, bool) {
	g := ToolGroup(normalizeToken(s))
	return g, g.Valid()
}

// ParseToolGroups parses a comma-separated tool-group list (seed 000
// ToolGroup::parse_list). Tokens are trimmed and ASCII-lowercased; blank
// tokens are ignored; an unknown token is skipped with a warning rather than
// failing the list, so one stale name cannot take an agent's whole surface
// away. When nothing valid remains the result is AgentDefaultGroups (with a
// warning unless the text was blank: "absent" and "none granted" are the
// same state and neither means no tools). Groups keep their order and are
// not de-duplicated. warnings is nil when there is nothing to report.
func ParseToolGroups(raw string) (groups []ToolGroup, warnings []string) {
	for _, token := range strings.Split(raw, ",") {
		token = normalizeToken(token)
		if token == "" {
			continue
		}
		if g, ok := ParseToolGroup(token); ok {
			groups = append(groups, g)
			continue
		}
		warnings = append(warnings, fmt.Sprintf("unknown tool group %q skipped", token))
	}
	if len(groups) == 0 {
		if strings.TrimSpace(raw) != "" {
			warnings = append(warnings, "no recognised tool group; using the agent default ("+
				joinGroups(AgentDefaultGroups())+")")
		}
		return AgentDefaultGroups(), warnings
	}
	return groups, warnings
}

func joinGroups(gs []ToolGroup) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = string(g)
	}
	return strings.Join(names, ",")
}

// Tools returns the MCP tool names (without the "mcp__hyperhive__" server
// prefix) that g grants. Lifecycle, approvals, execution and web_tools grant
// no MCP tool from this list (seed 000 explains each).
func (g ToolGroup) Tools() []string {
	switch g {
	case GroupMessaging:
		return []string{"send", "recv", "ack_until"}
	case GroupMeta:
		return []string{"get_agent_meta"}
	case GroupInbox:
		return []string{"get_loose_ends", "cancel_loose_end", "remind"}
	case GroupScheduling:
		return []string{"request_schedule_prompt", "fire_schedule_now", "cancel_schedule", "edit_schedule", "list_schedules"}
	case GroupForge:
		return []string{"create_repo"}
	}
	return nil
}

// BuiltinTools returns the built-in (non-MCP) tools g adds to the session:
// WebFetch and WebSearch for web_tools, nothing for any other group.
func (g ToolGroup) BuiltinTools() []string {
	if g == GroupWebTools {
		return []string{"WebFetch", "WebSearch"}
	}
	return nil
}

// Description is a short help text for g.
func (g ToolGroup) Description() string {
	switch g {
	case GroupMessaging:
		return "send, recv, ack_until: agent-to-agent messages"
	case GroupMeta:
		return "get_agent_meta: identity introspection"
	case GroupInbox:
		return "get_loose_ends, cancel_loose_end, remind: self-scheduling"
	case GroupLifecycle:
		return "no tools; kept so existing grants still parse"
	case GroupApprovals:
		return "no tools; allows cancelling approvals server-side (privileged)"
	case GroupScheduling:
		return "scheduled prompts: request, fire, cancel, edit, list (privileged)"
	case GroupForge:
		return "create_repo: create git repositories"
	case GroupExecution:
		return "shell commands through the bash MCP server; a subagent gets built-in Bash"
	case GroupWebTools:
		return "built-in WebFetch and WebSearch (web egress)"
	}
	return ""
}

// BaseBuiltinTools returns the built-in tools present in every session
// whatever the groups: Edit, Glob, Grep, Read, Skill, Write. Bash, nested
// agents and in-process todo lists are absent on purpose (seed 000).
func BaseBuiltinTools() []string {
	return []string{"Edit", "Glob", "Grep", "Read", "Skill", "Write"}
}

// AlwaysOnMCPTools returns the MCP tools every agent gets whatever its
// groups: set_status, compact, mark_todos_done (seed 000 ALWAYS_ON_TOOLS).
func AlwaysOnMCPTools() []string {
	return []string{"set_status", "compact", "mark_todos_done"}
}

// MCPServerPrefix is prepended to a group's MCP tool names to form the name
// the model (and --allowedTools) sees.
const MCPServerPrefix = "mcp__hyperhive__"

// BashMCPServerPrefix is the prefix of the tools of the out-of-process bash
// MCP server the execution group grants an agent (mcp__bash__run,
// mcp__bash__status, mcp__bash__kill; seed 000). That server is rendered
// into the agent's configuration by the execution group itself, so
// MCPAllowedToolsFor never lists its tools; the name matters to the
// kernel-ceiling rule of a surface's lists (KernelDeniesTool).
const BashMCPServerPrefix = "mcp__bash__"

// BuiltinToolsFor is the built-in tool list (the --tools value) for groups:
// BaseBuiltinTools followed by each group's BuiltinTools, de-duplicated,
// first occurrence kept. It is never empty and never contains Bash or an
// MCP ("__") name. Source: seed 000 builtin_tools_for.
func BuiltinToolsFor(groups []ToolGroup) []string {
	tools := BaseBuiltinTools()
	for _, g := range groups {
		for _, t := range g.BuiltinTools() {
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

// SubagentBuiltinToolsFor is BuiltinToolsFor plus built-in "Bash" iff groups
// holds execution: the parent runs shell through its MCP server, a subagent
// has none and gets the built-in instead. Only subagents ever get built-in
// Bash. Source: seed 000 subagent_builtin_tools_for.
func SubagentBuiltinToolsFor(groups []ToolGroup) []string {
	tools := BuiltinToolsFor(groups)
	if slices.Contains(groups, GroupExecution) {
		tools = append(tools, "Bash")
	}
	return tools
}

// MCPAllowedToolsFor is the MCP allow list for groups: AlwaysOnMCPTools,
// then each group's Tools in group order, de-duplicated (first occurrence
// kept), each prefixed with MCPServerPrefix.
func MCPAllowedToolsFor(groups []ToolGroup) []string {
	var names []string
	add := func(t string) {
		t = MCPServerPrefix + t
		if !slices.Contains(names, t) {
			names = append(names, t)
		}
	}
	for _, t := range AlwaysOnMCPTools() {
		add(t)
	}
	for _, g := range groups {
		for _, t := range g.Tools() {
			add(t)
		}
	}
	return names
}

// AgentCapability is a system-level grant enforced at dispatch, orthogonal
// to tool groups (seed 000 Capability). Its string is the wire name.
type AgentCapability string

// The closed agent-capability vocabulary.
const (
	// CapManageRootAgent: may manage any agent (the historical name is kept
	// so stored grants keep parsing).
	CapManageRootAgent AgentCapability = "manage_root_agent"
)

// AllAgentCapabilities lists every AgentCapability.
var AllAgentCapabilities = []AgentCapability{CapManageRootAgent}

// ParseAgentCapability parses a wire name exactly; ok is false for anything
// else, so an unknown grant grants nothing.
func ParseAgentCapability(s string) (AgentCapability, bool) {
	c := AgentCapability(s)
	return c, slices.Contains(AllAgentCapabilities, c)
}

// Description is a short help text for c.
func (c AgentCapability) Description() string {
	if c == CapManageRootAgent {
		return "manage any agent: state (rw) and config (ro) mounted for recovery"
	}
	return ""
}
