// Package harness is the agent-harness side of the seeds' policy: library
// functions an agent harness calls around each tool call, ported from
// seed 002 (the session approval cache and its keys), seed 003 (the
// capability gate: taxonomy, requirement and grant derivation, taint, the
// gate decision) and seed 004 (extension permissions and hooks); each doc
// comment names its source.
//
//   - gate.go: Capability, CapabilitySet, ToolProfile, RequiredCapabilities,
//     GrantedCapabilities, Decide (seed 003).
//   - approval.go: ApprovalCache, ApprovalKey, CanonicalJSON, ResolveAsk
//     (seed 002).
//   - extension.go: ExtensionPermission, ParseExtensionPermissions,
//     HookKind (seed 004).
//
// Like policy/, everything is a pure function over small values (the one
// mutable type, ApprovalCache, is owned by its caller and safe for
// concurrent use) and it imports the standard library only. Unknown input
// resolves to the narrowest posture (the full capability requirement,
// deny). enforcerd's kernel path (the daemon, the hook, enforcerd run)
// does not import it: the kernel ceiling comes from policy/ alone.
package harness
