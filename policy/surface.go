package policy

import (
	"fmt"
	"slices"
)

// Surface is everything an agent of one role is given inside one session:
// the resolved authority, the tool lists the model sees, and the kernel
// ceiling enforcerd installs, all from one resolution so they cannot
// disagree. Its JSON field names are a stable interface (enforcerd surface
// --json, the daemon API).
type Surface struct {
	// Role is the canonical role the name resolved to.
	Role Role `json:"role"`
	// Label is the public label: the canonical name for a role or legacy
	// alias, the name as given (trimmed) for an org-chart member title or
	// for a recorded name ResolveRole did not know.
	Label string `json:"label"`
	// PostureRole is the role governing the tool posture (= Role).
	PostureRole Role `json:"posture_role"`
	// Ceiling is the effective ceiling: the role's request clamped to the
	// session.
	Ceiling Ceiling `json:"ceiling"`
	// WriteAuthority is workspace_write or read_only.
	WriteAuthority WriteAuthority `json:"write_authority"`
	// AllowedTools is null to inherit the parent surface, [] for no tools.
	AllowedTools []string `json:"allowed_tools"`
	// DisallowedTools are deny entries and "prefix*" globs, sorted and
	// de-duplicated; never null.
	DisallowedTools []string `json:"disallowed_tools"`
	// Fingerprint is the v1 authority fingerprint.
	Fingerprint string `json:"fingerprint"`
	// BuiltinTools is the agent's built-in tool list (the --tools value),
	// without the tools the authority denies or the kernel ceiling makes
	// fail (SurfaceFor); never null.
	BuiltinTools []string `json:"builtin_tools"`
	// SubagentBuiltinTools is a subagent's built-in tool list, filtered
	// the same way; never null.
	SubagentBuiltinTools []string `json:"subagent_builtin_tools"`
	// MCPAllowedTools is the MCP allow list, server-prefixed, filtered the
	// same way; never null.
	MCPAllowedTools []string `json:"mcp_allowed_tools"`
	// Kernel is what enforcerd installs for the container's cgroup.
	Kernel KernelCeiling `json:"kernel"`
	// Warnings are non-fatal findings (skipped tool groups, ...); never null.
	Warnings []string `json:"warnings"`
}

// ResolveSurface computes the surface for a resolved role (LookupRole at
// an entry point, UnspecifiedRole when no role was given, ResolveRole for a
// recorded name), a session ceiling and a tool-group list in the
// comma-separated form ParseToolGroups reads ("" means the agent default).
// Unknown groups are skipped and reported in Warnings.
func ResolveSurface(res Resolution, session Ceiling, toolGroups string) Surface {
	groups, warnings := ParseToolGroups(toolGroups)
	s := SurfaceFor(res, session, groups)
	s.Warnings = append(warnings, s.Warnings...)
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	return s
}

// SurfaceFor computes the surface of resolved role res for already parsed
// tool groups:
//   - the authority is AuthorityFor(res.Role, session);
//   - the tool lists are seed 000's resolution for groups (BuiltinToolsFor,
//     SubagentBuiltinToolsFor, MCPAllowedToolsFor) with two kinds of tool
//     removed, in this one place (surfaceTools), order otherwise kept:
//     every tool the authority does not allow (seed 001: deny wins over
//     allow on every list the model sees; for example the subagent's Bash
//     goes when the raw shell is denied, and every mcp__ tool goes with
//     network=false), and every tool the effective kernel ceiling makes
//     fail (KernelDeniesTool: Write, Edit, MultiEdit and NotebookEdit with
//     write=false; Bash and the bash MCP server's tools with shell=none),
//     because a model that sees a tool will try it;
//   - tools=false empties all three lists and adds a warning: an empty
//     --tools value is ambiguous (seed 000), so a consumer must start the
//     agent with no tools rather than pass it;
//   - Kernel is the effective ceiling's kernel part.
//
// The lists never change the authority: DisallowedTools and the v1
// Fingerprint are seed 001's, computed over its deny lists alone.
func SurfaceFor(res Resolution, session Ceiling, groups []ToolGroup) Surface {
	a := AuthorityFor(res.Role, session)
	s := Surface{
		Role:                 a.PostureRole,
		Label:                res.Label,
		PostureRole:          a.PostureRole,
		Ceiling:              a.Ceiling,
		WriteAuthority:       a.WriteAuthority,
		AllowedTools:         slices.Clone(a.AllowedTools),
		DisallowedTools:      sortedUnique(a.DisallowedTools),
		Fingerprint:          a.Fingerprint(),
		BuiltinTools:         surfaceTools(a, BuiltinToolsFor(groups)),
		SubagentBuiltinTools: surfaceTools(a, SubagentBuiltinToolsFor(groups)),
		MCPAllowedTools:      surfaceTools(a, MCPAllowedToolsFor(groups)),
		Kernel:               a.Ceiling.Kernel(),
		Warnings:             []string{},
	}
	if a.AllowedTools != nil && len(a.AllowedTools) == 0 {
		s.AllowedTools = []string{}
		s.Warnings = append(s.Warnings, "tools=false: no tool is permitted; start the agent without tools (never with an empty --tools value)")
	}
	if res.Source == RoleFromUnknown {
		s.Warnings = append(s.Warnings, fmt.Sprintf("unknown role %q runs with the explore posture", res.Label))
	}
	return s
}

// writeBuiltinTools are the built-in tools whose only effect is to modify
// files: with write=false the kernel refuses every write they make.
var writeBuiltinTools = []string{"Edit", "MultiEdit", "NotebookEdit", "Write"}

// KernelDeniesTool reports whether kernel ceiling k makes every use of tool
// fail, so that no tool list of a surface may offer it:
//   - write=false: the file-writing built-ins Edit, MultiEdit, NotebookEdit
//     and Write (the kernel denies any modification of an inode);
//   - shell=none: built-in Bash and the bash MCP server's tools (names
//     starting with BashMCPServerPrefix): the kernel execs nothing but the
//     entrypoint and its allow list.
//
// shell=read_only keeps Bash: commands run, write-denied, which is the
// read-only inspection explore, planner and reviewer keep it for. Network
// adds no rule here: with network=false the authority's network deny list
// ("mcp*") already takes every MCP tool off the lists, and the web_tools
// built-ins are left to their group. Names compare as MatchDeny compares
// them (trimmed, ASCII case-insensitive).
func KernelDeniesTool(k KernelCeiling, tool string) bool {
	if !k.Write {
		for _, t := range writeBuiltinTools {
			if MatchDeny(t, tool) {
				return true
			}
		}
	}
	if k.Shell.canonical() == ShellNone {
		return MatchDeny("Bash", tool) || MatchDeny(BashMCPServerPrefix+"*", tool)
	}
	return false
}

// surfaceTools keeps the tools of a list that a allows and a's kernel
// ceiling does not make fail (KernelDeniesTool), in order; never nil.
func surfaceTools(a Authority, tools []string) []string {
	k := a.Ceiling.Kernel()
	out := []string{}
	for _, t := range tools {
		if a.IsToolAllowed(t) && !KernelDeniesTool(k, t) {
			out = append(out, t)
		}
	}
	return out
}
