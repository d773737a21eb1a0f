package policy

import (
	"fmt"
	"slices"
	"strings"
)

// DenyList names one of the five posture deny lists of seed 001. Each list
// takes a family of tool names off a child's surface when its ceiling lacks
// the matching authority. Entries are exact names or "prefix*" globs,
// matched case-insensitively (MatchDeny).
type DenyList string

// The closed deny-list vocabulary (AllDenyLists gives seed 001's order).
const (
	// DenyNetworkTools: installed when network=false. Every spelling of web
	// browsing and fetching, networked service tools, the reaching actions
	// of the RLM family, and every MCP surface ("mcp*": remote servers get
	// runtime names, so only a prefix can catch them). The "Web" family
	// name itself is left out on purpose: its read-only search/fetch
	// actions stay available.
	DenyNetworkTools DenyList = "network_tools"
	// DenyMutatingTools: installed when write=false. The action aliases
	// that modify the workspace (never the "File" family, which would take
	// read/list/search with it), plus rlm_eval, whose Python can open a
	// file for writing as easily as a socket.
	DenyMutatingTools DenyList = "mutating_tools"
	// DenyRawShell: installed unless write=true and shell=full. Arbitrary
	// commands are a mutation primitive, so a write-denied agent loses them
	// even with shell=full.
	DenyRawShell DenyList = "raw_shell"
	// DenyVerificationSurface: installed when shell is narrower than full.
	// The bounded checks still start a process; only a full-shell ceiling
	// holds the authority to start one.
	DenyVerificationSurface DenyList = "verification_surface"
	// DenyNonShellExecution: installed when write=false. Execution
	// primitives not spelled as shell (gate runs, automations, MCP server
	// start, durable work records).
	DenyNonShellExecution DenyList = "non_shell_execution"
)

// AllDenyLists lists every DenyList in application order.
var AllDenyLists = []DenyList{
	DenyNetworkTools, DenyRawShell, DenyVerificationSurface, DenyMutatingTools, DenyNonShellExecution,
}

// The entries of each deny list, exactly as seed 001 spells them.
var denyEntries = map[DenyList][]string{
	DenyNetworkTools: {
		"web_*", "web.*", "web.run", "web_run", "web_search", "web.fetch", "web_fetch",
		"fetch_url", "wait_for_dev_server", "browse", "browser",
		"github", "finance",
		"rlm_open", "rlm_eval",
		"mcp*", "start_mcp_server", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
	},
	DenyMutatingTools: {
		"write_file", "edit_file", "apply_patch", "fim_edit", "revert_turn", "rlm_eval",
	},
	DenyRawShell: {
		"Bash", "exec_shell", "exec_shell_wait", "exec_wait", "exec_shell_interact",
		"exec_interact", "exec_shell_cancel", "task_shell_start", "task_shell_wait",
		"terminal/*",
	},
	DenyVerificationSurface: {"Run", "run_tests", "run_verifiers"},
	DenyNonShellExecution: {
		"task_gate_run", "task_create", "task_cancel", "pr_attempt_record", "pr_attempt_preflight",
		"automation_run", "automation_create", "automation_update", "automation_pause",
		"automation_resume", "automation_delete", "start_mcp_server",
	},
}

// Entries returns a fresh copy of the list's entries in seed order; nil for
// a DenyList outside the vocabulary.
func (d DenyList) Entries() []string { return slices.Clone(denyEntries[d]) }

// Deny-list sentinels (seed 001): one entry per denial that every such
// denial installs and no narrower list does, so a posture can be read back
// off the list that enforces it.
const (
	// NetworkDenialSentinel is installed by every network denial; the
	// "web_*"/"web.*" globs deliberately do not match it.
	NetworkDenialSentinel = "fetch_url"
	// RawShellSentinel is installed whenever the raw shell is removed.
	RawShellSentinel = "exec_shell"
	// ShellAuthoritySentinel is installed only when the shell ceiling is
	// narrower than full, i.e. the agent may not start a process at all.
	ShellAuthoritySentinel = "run_tests"
)

// MatchDeny reports whether deny-list entry rule matches tool name. An entry
// ending in "*" matches every name starting with the rest of the entry; any
// other entry matches the whole name. Both compare ASCII case-insensitively
// and ignore white space around the name and the entry, so a deny entry can
// never be dodged by re-spelling a name's case. A "*" anywhere but at the
// end is literal. Source: seed 001 (is_tool_denied, "prefix*" globs).
func MatchDeny(rule, name string) bool {
	rule, name = strings.TrimSpace(rule), strings.TrimSpace(name)
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		return len(name) >= len(prefix) && EqualFoldASCII(name[:len(prefix)], prefix)
	}
	return EqualFoldASCII(name, rule)
}

// EqualFoldASCII reports whether a and b are equal when only ASCII letters
// are folded (Rust's eq_ignore_ascii_case): byte by byte, no Unicode case
// folding, so "\u212A" (KELVIN SIGN) never stands for "k" and a name or key
// matches only the spellings a reader sees as the same ASCII word.
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// WriteAuthority is the spawn write authority implied by a ceiling.
type WriteAuthority string

// The closed write-authority vocabulary (seed 001).
const (
	WriteAuthorityWorkspace WriteAuthority = "workspace_write"
	WriteAuthorityReadOnly  WriteAuthority = "read_only"
)

// AllWriteAuthorities lists every WriteAuthority.
var AllWriteAuthorities = []WriteAuthority{WriteAuthorityWorkspace, WriteAuthorityReadOnly}

// Authority is a requested posture clamped to the live session and turned
// into the concrete knobs a child carries (seed 001 ChildAuthority).
type Authority struct {
	// Ceiling is the clamped ceiling; Within both inputs.
	Ceiling Ceiling
	// AllowedTools narrows the visible surface: nil inherits the parent's
	// surface, a non-nil empty slice (tools=false) means no tool at all.
	AllowedTools []string
	// DisallowedTools are the deny entries (names and "prefix*" globs),
	// sorted by byte order and de-duplicated. Deny wins over allow.
	DisallowedTools []string
	// WriteAuthority is workspace_write iff Ceiling.Write.
	WriteAuthority WriteAuthority
	// PostureRole is the canonical role governing the tool posture.
	PostureRole Role
}

// PostureRoleFor maps a ceiling onto the role whose posture it amounts to:
// explore when tools=false or shell is none/read_only without write,
// implement when write=true, test for write=false with shell=full.
// Source: seed 001 posture_role_for.
func PostureRoleFor(c Ceiling) Role {
	switch {
	case !c.Tools:
		return RoleExplore
	case c.Write:
		return RoleImplement
	case c.Shell.canonical() == ShellFull:
		return RoleTest
	default:
		return RoleExplore
	}
}

// ClampAuthority intersects requested with session and derives the child's
// surface (seed 001 ChildAuthority::clamp). With c = requested.Clamp(session):
//   - tools=false: AllowedTools is empty (no tools); otherwise nil (inherit);
//   - network=false: DenyNetworkTools;
//   - not (write and shell=full): DenyRawShell;
//   - shell narrower than full: DenyVerificationSurface;
//   - write=false: DenyMutatingTools and DenyNonShellExecution;
//   - WriteAuthority from c.Write, PostureRole = PostureRoleFor(c).
func ClampAuthority(requested, session Ceiling) Authority {
	c := requested.Clamp(session)
	a := Authority{Ceiling: c, WriteAuthority: WriteAuthorityReadOnly, PostureRole: PostureRoleFor(c)}
	if !c.Tools {
		a.AllowedTools = []string{}
	}
	if c.Write {
		a.WriteAuthority = WriteAuthorityWorkspace
	}
	var deny []string
	for _, list := range ActiveDenyLists(c) {
		deny = append(deny, denyEntries[list]...)
	}
	a.DisallowedTools = sortedUnique(deny)
	return a
}

// ActiveDenyLists returns the deny lists a clamped ceiling c installs, in
// AllDenyLists order (the rules of ClampAuthority).
func ActiveDenyLists(c Ceiling) []DenyList {
	var out []DenyList
	full := c.Shell.canonical() == ShellFull
	if !c.Network {
		out = append(out, DenyNetworkTools)
	}
	if !(c.Write && full) {
		out = append(out, DenyRawShell)
	}
	if !full {
		out = append(out, DenyVerificationSurface)
	}
	if !c.Write {
		out = append(out, DenyMutatingTools, DenyNonShellExecution)
	}
	return out
}

// AuthorityForRole resolves role with ResolveRole (any name; an unknown one
// gets explore's posture) and returns AuthorityFor the resolved role (seed
// 001 ChildAuthority::from_runtime_role). An entry point resolves a name
// with LookupRole and calls AuthorityFor instead.
func AuthorityForRole(role string, session Ceiling) Authority {
	return AuthorityFor(ResolveRole(role).Role, session)
}

// AuthorityFor derives the authority of canonical role r inside session:
// ClampAuthority(RequestedCeiling(r, session), session), with the posture
// role set to r itself, and, for explore, reviewer and planner when the
// clamped shell is not none, every "Bash" entry (case-insensitive) removed
// from the deny list: those roles keep the canonical Bash entry for
// classifier-bounded read-only inspection while every other shell alias
// stays denied. A Role outside the vocabulary gets explore's authority.
// Source: seed 001 ChildAuthority::from_runtime_role.
func AuthorityFor(r Role, session Ceiling) Authority {
	r = r.canonical()
	a := ClampAuthority(RequestedCeiling(r, session), session)
	a.PostureRole = r
	if RequiresReadOnlyShell(r) && a.Ceiling.Shell != ShellNone {
		a.DisallowedTools = slices.DeleteFunc(a.DisallowedTools, func(n string) bool {
			return EqualFoldASCII(n, "Bash")
		})
	}
	return a
}

// IsToolDenied reports whether any deny entry of a matches name.
func (a Authority) IsToolDenied(name string) bool {
	for _, rule := range a.DisallowedTools {
		if MatchDeny(rule, name) {
			return true
		}
	}
	return false
}

// IsToolAllowed reports whether the child may see and call name: it is not
// denied (deny wins over allow, whatever the allow list says) and either
// the allow list is nil (inherit) or holds name exactly (byte equality:
// allow matching is deliberately narrower than deny matching).
func (a Authority) IsToolAllowed(name string) bool {
	if a.IsToolDenied(name) {
		return false
	}
	return a.AllowedTools == nil || slices.Contains(a.AllowedTools, name)
}

// Fingerprint is a stable, human-readable digest of the surface a installs,
// compared byte for byte by other components (seed 001 fingerprint):
//
//	v1;posture=P;write=W;depth=N;tools=B;network=B;shell=S;allow=A;deny=D
//
// P is the posture role, W the write authority, N the delegation depth, B
// "true"/"false", S the shell's wire spelling. A is "inherit" for a nil
// allow list, "none" for an empty one, else the entries sorted (byte order),
// de-duplicated and comma-joined; D is the deny entries likewise (possibly
// empty). Input order never changes the fingerprint.
func (a Authority) Fingerprint() string {
	allow := "inherit"
	switch {
	case a.AllowedTools == nil:
	case len(a.AllowedTools) == 0:
		allow = "none"
	default:
		allow = strings.Join(sortedUnique(a.AllowedTools), ",")
	}
	return fmt.Sprintf("v1;posture=%s;write=%s;depth=%d;tools=%t;network=%t;shell=%s;allow=%s;deny=%s",
		a.PostureRole, a.WriteAuthority, a.Ceiling.DelegationDepth, a.Ceiling.Tools,
		a.Ceiling.Network, a.Ceiling.Shell.canonical(), allow, strings.Join(sortedUnique(a.DisallowedTools), ","))
}

// sortedUnique returns a sorted (byte order), de-duplicated, non-nil copy.
func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
