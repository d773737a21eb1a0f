package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Role is one of the eight canonical roles of the closed role vocabulary
// (seed 001, FleetRole). Its string is the public, canonical spelling.
// Role values only come from LookupRole, ResolveRole or the constants; a
// Role outside the vocabulary is treated as RoleExplore wherever a posture
// is derived.
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
// them, only LookupRole and ResolveRole's third step do. Each maps to a
// posture no wider than the one the title implies, and none widens
// authority.
var memberRoles = map[string]Role{
	"manager": RoleGeneral, "coordinator": RoleGeneral, "operator": RoleGeneral,
	"synthesizer": RolePlanner, "summarizer": RolePlanner, "reducer": RolePlanner,
	"smoke-runner": RoleTest,
	"read-only":    RoleExplore,
}

// LegacyRoleAliases returns the legacy spellings ParseRole accepts, as a
// fresh map from alias to canonical role (seed 001 VALID_ROLE_ALIASES).
func LegacyRoleAliases() map[string]Role { return copyRoleMap(legacyRoles) }

// MemberRoleAliases returns the org-chart member titles LookupRole and
// ResolveRole map to a posture, as a fresh map (seed 001 member_role_alias).
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
	RoleFromEmpty     RoleSource = "empty"     // no role given (or, for ResolveRole, a blank one): the general default
	RoleFromCanonical RoleSource = "canonical" // a canonical role name
	RoleFromLegacy    RoleSource = "legacy"    // a legacy alias
	RoleFromMember    RoleSource = "member"    // an org-chart member title
	RoleFromUnknown   RoleSource = "unknown"   // nothing matched: ResolveRole failed closed to explore
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
	// alias, "general" for an empty name, the trimmed input otherwise (a
	// member title, or a name ResolveRole did not know, keeps its identity
	// on every receipt).
	Label string
	// Source is the resolution step that matched.
	Source RoleSource
}

// lookupToken maps a normalised token (normalizeToken) onto the closed
// vocabulary through the declared tables only: a canonical name, a legacy
// alias, an org-chart member title. ok is false for anything else,
// including the empty token. The one table lookup behind LookupRole and
// ResolveRole.
func lookupToken(token string) (r Role, src RoleSource, ok bool) {
	switch {
	case token == "":
		return "", "", false
	case Role(token).Valid():
		return Role(token), RoleFromCanonical, true
	case legacyRoles[token] != "":
		return legacyRoles[token], RoleFromLegacy, true
	case memberRoles[token] != "":
		return memberRoles[token], RoleFromMember, true
	}
	return "", "", false
}

// resolution builds the Resolution of a name lookupToken accepted: the
// label is the canonical name for a role or legacy alias, the trimmed name
// (case kept) for a member title.
func resolution(name string, r Role, src RoleSource) Resolution {
	res := Resolution{Input: name, Role: r, Source: src, Label: string(r)}
	if src == RoleFromMember {
		res.Label = strings.TrimSpace(name)
	}
	return res
}

// ErrUnknownRole is the sentinel every LookupRole error wraps; test for it
// with errors.Is.
var ErrUnknownRole = errors.New("unknown role")

// RoleError is the error LookupRole returns for a name it does not accept.
// Name is the name as given. The message quotes it (control characters
// escaped) and lists every accepted name, each group sorted:
//
//	unknown role "hacker"; valid names: roles advisor, custom, ...; legacy aliases awaiter, ...; org-chart member titles coordinator, ...
//	empty role name; valid names: ...
//
// errors.Is(err, ErrUnknownRole) holds for every RoleError.
type RoleError struct {
	Name string
}

func (e *RoleError) Error() string {
	what := fmt.Sprintf("unknown role %q", e.Name)
	if strings.TrimSpace(e.Name) == "" {
		what = "empty role name"
	}
	return what + "; valid names: " + validRoleNamesText()
}

// Is makes errors.Is(err, ErrUnknownRole) true.
func (e *RoleError) Is(target error) bool { return target == ErrUnknownRole }

// validRoleNamesText is the list of accepted names RoleError prints.
func validRoleNamesText() string {
	roles := make([]string, len(AllRoles))
	for i, r := range AllRoles {
		roles[i] = string(r)
	}
	slices.Sort(roles)
	return "roles " + strings.Join(roles, ", ") +
		"; legacy aliases " + strings.Join(sortedKeys(legacyRoles), ", ") +
		"; org-chart member titles " + strings.Join(sortedKeys(memberRoles), ", ")
}

func sortedKeys(m map[string]Role) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// RoleNames returns every name LookupRole accepts, in their normalised
// (lower-case) spelling: the canonical roles, the legacy aliases and the
// org-chart member titles, sorted by byte order, as a fresh slice.
func RoleNames() []string {
	names := sortedKeys(legacyRoles)
	names = append(names, sortedKeys(memberRoles)...)
	for _, r := range AllRoles {
		names = append(names, string(r))
	}
	slices.Sort(names)
	return names
}

// LookupRole is the strict role parser every entry point uses (run's and
// surface's --role, the enforcerd.io/role annotation, the daemon API's
// "role"). The name is trimmed and ASCII-lowercased (normalizeToken: no
// Unicode case folding) and must then be a canonical role, a legacy alias
// (LegacyRoleAliases) or an org-chart member title (MemberRoleAliases); the
// Resolution is the one ResolveRole gives such a name, with Source
// RoleFromCanonical, RoleFromLegacy or RoleFromMember.
//
// Anything else is a *RoleError wrapping ErrUnknownRole, and the returned
// Resolution is the zero value: a misspelled name ("reviwer"), a name
// nobody declared ("auditor"), and a given but empty or blank name. A role
// is a security setting, so a typo must stop the caller rather than run
// under some other posture, and only leaving the setting out altogether
// selects the default (UnspecifiedRole). ResolveRole's fail-closed fallback
// to explore stays the seed's rule for names that are already recorded; it
// never stands in for a rejected name.
func LookupRole(name string) (Resolution, error) {
	r, src, ok := lookupToken(normalizeToken(name))
	if !ok {
		return Resolution{}, &RoleError{Name: name}
	}
	return resolution(name, r, src), nil
}

// UnspecifiedRole is the Resolution for a role that is not given at all (no
// --role flag, no enforcerd.io/role annotation, no "role" key in an API
// request): general, labelled "general", Source RoleFromEmpty, Input "".
// This is seed 001's unspecified-role default (runtime_role_for_member,
// step 1). Only the absence of the setting means it; a given but empty name
// is a LookupRole error.
func UnspecifiedRole() Resolution {
	return Resolution{Role: RoleGeneral, Label: string(RoleGeneral), Source: RoleFromEmpty}
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
// This is the seed's resolution of a name that is already recorded (a
// registration stored by an older enforcerd, which accepted any name). A
// name arriving from outside goes through LookupRole instead, which refuses
// what steps 1 and 4 would absorb.
//
// Deviation from the seed: the public label of an empty name is "general"
// (the seed's public_role_label would return ""), so a receipt never shows
// a blank role.
func ResolveRole(name string) Resolution {
	token := normalizeToken(name)
	if r, src, ok := lookupToken(token); ok {
		return resolution(name, r, src)
	}
	if token == "" {
		res := UnspecifiedRole()
		res.Input = name
		return res
	}
	return Resolution{Input: name, Role: RoleExplore, Label: strings.TrimSpace(name), Source: RoleFromUnknown}
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
// clamp, by this table:
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
// other role. session contributes only its depth; the caller
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
