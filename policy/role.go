package policy

import "strings"

// Role is one of the eight canonical roles of the closed role vocabulary
// (seed 001, FleetRole). Its string is the public, canonical spelling.
// Role values only come from ResolveRole or the constants; a Role outside
// the vocabulary is treated as RoleExplore wherever a posture is derived.
type Role string

// The closed role vocabulary, in schema order (seed 001).
const (
	RoleGeneral   Role = "general"   // full tool access for multi-step work
	RoleExplore   Role = "explore"   // read-only exploration; the fail-closed default
	RolePlanner   Role = "planner"   // grounded strategy: reads, probes, never mutates
	RoleReviewer  Role = "reviewer"  // reads and grades a change, no network
	RoleImplement Role = "implement" // lands focused code changes
	RoleTest      Role = "test"      // runs the checks and reports, never writes
	RoleAdvisor   Role = "advisor"   // counsel: reads, no shell, no writes
	RoleCustom    Role = "custom"    // inherits the session ceiling through clamp
)

// AllRoles lists every Role in schema order. A test pins it against the
// declared constants.
var AllRoles = []Role{
	RoleGeneral, RoleExplore, RolePlanner, RoleReviewer,
	RoleImplement, RoleTest, RoleAdvisor, RoleCustom,
}

// Valid reports whether r is one of AllRoles.
func (r Role) Valid() bool {
	switch r {
	case RoleGeneral, RoleExplore, RolePlanner, RoleReviewer,
		RoleImplement, RoleTest, RoleAdvisor, RoleCustom:
		return true
	}
	return false
}

// canonical maps an out-of-vocabulary Role onto RoleExplore (fail closed).
func (r Role) canonical() Role {
	if r.Valid() {
		return r
	}
	return RoleExplore
}

// Description is a one-line, model-facing summary of the role.
func (r Role) Description() string {
	switch r {
	case RoleGeneral:
		return "General-purpose agent with the whole session surface for multi-step work."
	case RoleExplore:
		return "Read-only exploration and code search; bounded read-only shell probes."
	case RolePlanner:
		return "Plans from the workspace and the web; read-only probes, no changes."
	case RoleReviewer:
		return "Reads a change and grades it against a standard; no network."
	case RoleImplement:
		return "Makes a focused code change with the smallest surrounding edit."
	case RoleTest:
		return "Runs the workspace's checks and reports the outcome with evidence."
	case RoleAdvisor:
		return "Read-only counsel on judgement calls and design; no shell."
	case RoleCustom:
		return "Whatever the session allows, narrowed only by clamp."
	}
	return ""
}

// legacyRoles maps the legacy role spellings seed 001 still accepts at parse
// boundaries (its migrate_legacy_role_token) to the canonical role.
var legacyRoles = map[string]Role{
	"worker": RoleGeneral, "general-purpose": RoleGeneral, "general_purpose": RoleGeneral, "default": RoleGeneral,
	"scout": RoleExplore, "exploration": RoleExplore, "explorer": RoleExplore,
	"plan": RolePlanner, "planning": RolePlanner, "awaiter": RolePlanner,
	"review": RoleReviewer, "code-review": RoleReviewer, "code_review": RoleReviewer,
	"builder": RoleImplement, "implementer": RoleImplement, "implementation": RoleImplement,
	"verifier": RoleTest, "verify": RoleTest, "verification": RoleTest, "validator": RoleTest, "tester": RoleTest,
	"consultant": RoleAdvisor, "oracle": RoleAdvisor,
}

// memberRoles maps org-chart member titles (seed 001 member_role_alias) to a
// posture. They are deliberately not role aliases: ParseRole does not accept
// them, only ResolveRole's third step does. Each maps to a posture no wider
// than the one the title implies, and none widens authority.
var memberRoles = map[string]Role{
	"manager": RoleGeneral, "coordinator": RoleGeneral, "operator": RoleGeneral,
	"synthesizer": RolePlanner, "summarizer": RolePlanner, "reducer": RolePlanner,
	"smoke-runner": RoleTest,
	"read-only":    RoleExplore,
}

// LegacyRoleAliases returns the legacy spellings ParseRole accepts, as a
// fresh map from alias to canonical role (seed 001 VALID_ROLE_ALIASES).
func LegacyRoleAliases() map[string]Role { return copyRoleMap(legacyRoles) }

// MemberRoleAliases returns the org-chart member titles ResolveRole maps to
// a posture, as a fresh map (seed 001 member_role_alias).
func MemberRoleAliases() map[string]Role { return copyRoleMap(memberRoles) }

func copyRoleMap(m map[string]Role) map[string]Role {
	out := make(map[string]Role, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// normalizeToken trims white space and lowercases ASCII letters only.
// Unicode case folding is deliberately not applied: strings.ToLower would
// turn "wor\u212Aer" (KELVIN SIGN) into "worker" and hand a name nobody
// declared write authority. Seed 001 uses to_ascii_lowercase for the same
// effect.
func normalizeToken(s string) string {
	s = strings.TrimSpace(s)
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// ParseRole parses a role name or legacy alias (trimmed, ASCII-lowercased)
// into the canonical Role. ok is false for anything else, including the
// empty string and the org-chart member titles. Source: seed 001
// FleetRole::from_str.
func ParseRole(s string) (role Role, ok bool) {
	token := normalizeToken(s)
	if r, found := legacyRoles[token]; found {
		return r, true
	}
	if r := Role(token); r.Valid() {
		return r, true
	}
	return "", false
}

// PublicLabel is the label a role token is shown under: the canonical name
// when the token is a role or legacy alias, otherwise the token itself,
// trimmed but not lowercased ("Auditor " → "Auditor"). Source: seed 001
// public_role_label.
func PublicLabel(token string) string {
	if r, ok := ParseRole(token); ok {
		return string(r)
	}
	return strings.TrimSpace(token)
}

// RoleSource says which resolution step produced a Resolution.
type RoleSource string

// The resolution steps, in the order ResolveRole tries them.
const (
	RoleFromEmpty     RoleSource = "empty"     // blank input: the general default
	RoleFromCanonical RoleSource = "canonical" // a canonical role name
	RoleFromLegacy    RoleSource = "legacy"    // a legacy alias
	RoleFromMember    RoleSource = "member"    // an org-chart member title
	RoleFromUnknown   RoleSource = "unknown"   // nothing matched: failed closed to explore
)

// AllRoleSources lists every RoleSource in resolution order.
var AllRoleSources = []RoleSource{RoleFromEmpty, RoleFromCanonical, RoleFromLegacy, RoleFromMember, RoleFromUnknown}

// Resolution is the outcome of resolving a free-form role name.
type Resolution struct {
	// Input is the name as given.
	Input string
	// Role is the canonical role whose posture applies. Always Valid.
	Role Role
	// Label is the public label: the canonical name for a role or legacy
	// alias, "general" for an empty name, the trimmed input otherwise (an
	// unknown name keeps its identity on every receipt).
	Label string
	// Source is the resolution step that matched.
	Source RoleSource
}

// ResolveRole maps any role name onto the closed vocabulary. The name is
// trimmed and ASCII-lowercased, then, in order and nothing else:
//  1. empty → RoleGeneral (an unspecified role is the documented default);
//  2. a canonical name or legacy alias (ParseRole);
//  3. an org-chart member title (MemberRoleAliases);
//  4. anything else fails closed to RoleExplore: no writes, no raw shell.
//
// Step 4 is the privilege boundary: a name nobody declared can never obtain
// write authority. An operator who wants the session's own ceiling spells
// that "custom". Source: seed 001 runtime_role_for_member.
//
// Deviation from the seed: the public label of an empty name is "general"
// (the seed's public_role_label would return ""), so a receipt never shows
// a blank role.
func ResolveRole(name string) Resolution {
	token := normalizeToken(name)
	res := Resolution{Input: name, Label: strings.TrimSpace(name)}
	switch {
	case token == "":
		res.Role, res.Source, res.Label = RoleGeneral, RoleFromEmpty, string(RoleGeneral)
	case Role(token).Valid():
		res.Role, res.Source, res.Label = Role(token), RoleFromCanonical, token
	case legacyRoles[token] != "":
		res.Role, res.Source = legacyRoles[token], RoleFromLegacy
		res.Label = string(res.Role)
	case memberRoles[token] != "":
		res.Role, res.Source = memberRoles[token], RoleFromMember
	default:
		res.Role, res.Source = RoleExplore, RoleFromUnknown
	}
	return res
}

// RequiresReadOnlyShell reports whether role may never hold a mutating
// shell whatever its profile asks for: explore, planner and reviewer
// (seed 001 role_requires_read_only_shell). These are also the roles that
// keep the canonical "Bash" entry under a non-none shell (AuthorityForRole).
func RequiresReadOnlyShell(role Role) bool {
	switch role.canonical() {
	case RoleExplore, RolePlanner, RoleReviewer:
		return true
	}
	return false
}

// RequestedCeiling is the ceiling role asks for inside session, before the
// clamp. It is the product table (product.md "Policy core"):
//
//	role       write network shell      note
//	general    yes   yes     full
//	explore    no    yes     read_only
//	planner    no    yes     read_only
//	reviewer   no    no      read_only
//	implement  yes   yes     full
//	test       no    no      full       runs checks; raw shell removed by write=false
//	advisor    no    yes     none
//	custom     yes   yes     full       inherits the session ceiling via clamp
//
// Every role asks for tools=true. The delegation depth is session's depth
// minus one (floor 0) for general, implement and custom, and 0 for every
// other role (issue 2). session contributes only its depth; the caller
// still clamps the result to session. A Role outside the vocabulary gets
// explore's ceiling.
func RequestedCeiling(role Role, session Ceiling) Ceiling {
	c := Ceiling{Tools: true}
	switch role.canonical() {
	case RoleGeneral, RoleImplement, RoleCustom:
		c.Write, c.Network, c.Shell = true, true, ShellFull
		if session.DelegationDepth > 0 {
			c.DelegationDepth = session.DelegationDepth - 1
		}
	case RoleExplore, RolePlanner:
		c.Network, c.Shell = true, ShellReadOnly
	case RoleReviewer:
		c.Shell = ShellReadOnly
	case RoleTest:
		c.Shell = ShellFull
	case RoleAdvisor:
		c.Network, c.Shell = true, ShellNone
	}
	return c
}
