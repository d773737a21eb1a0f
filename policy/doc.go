// Package policy is enforcerd's pure policy core: from a role name, a
// session ceiling and a tool-group list it computes the effective ceiling,
// the tool surface the agent's model sees, the authority fingerprint, and
// the kernel ceiling enforcerd installs. Because one resolution produces
// all of them, the tools and the kernel cannot disagree.
//
// Everything here is a pure function over small values: no I/O, no clock,
// no environment, no package state read implicitly. It imports the
// standard library only.
//
// The rules port reference implementations of agent-harness policy, cited
// as seed 000 (tool groups and the built-in tool list) and seed 001 (roles,
// the ceiling clamp, child authority and its fingerprint), together with
// enforcerd's own rules for the ceiling text and the role table; each doc
// comment names its source. The seeds' harness-side library (seeds 002 to
// 004: approval cache, capability gate, extension permissions) is
// policy/harness, which nothing on the kernel path imports.
//
//   - ceiling.go: Ceiling, Shell, Clamp (field-wise meet), ceiling text.
//   - role.go: the closed role vocabulary, aliases, the strict parser every
//     entry point uses (LookupRole), the seed's fail-closed resolution of
//     recorded names (ResolveRole), the requested-ceiling table (seed 001).
//   - authority.go: the five deny lists, sentinels, Authority, the v1
//     fingerprint (seed 001).
//   - toolgroups.go: tool groups, built-in and MCP tool lists, agent
//     capabilities (seed 000).
//   - surface.go: Surface, the whole result enforcerd surface prints, and
//     the kernel ceiling's rule for its tool lists (KernelDeniesTool).
//
// Fail direction everywhere: a role name from outside that is not declared
// is an error (LookupRole), never a guess; other unknown input resolves to
// the narrowest posture (explore, shell none, deny), never the widest.
//
// Layering (docs/design.md): layer 0; it imports the standard library only.
package policy
