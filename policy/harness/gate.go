package harness

import "fmt"

// Capability is one thing a tool call can do: the unit of the capability
// gate (seed 003). Each is one bit of a CapabilitySet.
type Capability uint8

// The closed capability taxonomy, one bit each, in declaration order.
const (
	// CapLocalRead: read state confined to the sandbox (workspace files).
	CapLocalRead Capability = 1 << iota
	// CapLocalWrite: mutate state confined to the sandbox (including a
	// sandboxed shell); destructive inside the box is still local.
	CapLocalWrite
	// CapFixedConnectorRead: call an operator-registered connector or a
	// first-party service, a fixed destination the operator vouched for.
	// Taint never revokes it.
	CapFixedConnectorRead
	// CapArbitraryEgress: send bytes to a model-chosen destination (the
	// built-in fetchers), the classic exfiltration channel.
	CapArbitraryEgress
	// CapMutateExternal: a side effect outside the sandbox (a message, an
	// issue, a payment); an egress channel even to a fixed destination.
	CapMutateExternal
)

// AllCapabilities lists every Capability in declaration order.
var AllCapabilities = []Capability{
	CapLocalRead, CapLocalWrite, CapFixedConnectorRead, CapArbitraryEgress, CapMutateExternal,
}

// String is the stable kebab-case wire name ("local-read", ...); "" for a
// value outside the taxonomy.
func (c Capability) String() string {
	switch c {
	case CapLocalRead:
		return "local-read"
	case CapLocalWrite:
		return "local-write"
	case CapFixedConnectorRead:
		return "fixed-connector-read"
	case CapArbitraryEgress:
		return "arbitrary-egress"
	case CapMutateExternal:
		return "mutate-external"
	}
	return ""
}

// ParseCapability parses an exact wire name; ok is false for anything else,
// so operator config with a typo grants nothing.
func ParseCapability(name string) (Capability, bool) {
	for _, c := range AllCapabilities {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

// CapabilitySet is a set of capabilities as a bitset. The gate works only
// through set algebra, never on a specific member.
type CapabilitySet uint8

// AllCapabilitySet is the full privileged set: the fail-closed requirement
// of a tool that cannot be classified.
func AllCapabilitySet() CapabilitySet {
	var s CapabilitySet
	for _, c := range AllCapabilities {
		s = s.With(c)
	}
	return s
}

// SetOf returns the set holding exactly cs.
func SetOf(cs ...Capability) CapabilitySet {
	var s CapabilitySet
	for _, c := range cs {
		s = s.With(c)
	}
	return s
}

// With returns s plus c.
func (s CapabilitySet) With(c Capability) CapabilitySet { return s | CapabilitySet(c) }

// Contains reports whether c is in s.
func (s CapabilitySet) Contains(c Capability) bool { return s&CapabilitySet(c) != 0 }

// IsEmpty reports whether s has no members.
func (s CapabilitySet) IsEmpty() bool { return s == 0 }

// SubsetOf reports whether every member of s is in o.
func (s CapabilitySet) SubsetOf(o CapabilitySet) bool { return s&^o == 0 }

// Union returns s ∪ o.
func (s CapabilitySet) Union(o CapabilitySet) CapabilitySet { return s | o }

// Intersect returns s ∩ o.
func (s CapabilitySet) Intersect(o CapabilitySet) CapabilitySet { return s & o }

// Difference returns the members of s not in o.
func (s CapabilitySet) Difference(o CapabilitySet) CapabilitySet { return s &^ o }

// Members returns the members of s in AllCapabilities order.
func (s CapabilitySet) Members() []Capability {
	var out []Capability
	for _, c := range AllCapabilities {
		if s.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}

// Names returns the wire names of s's members in AllCapabilities order.
func (s CapabilitySet) Names() []string {
	var out []string
	for _, c := range s.Members() {
		out = append(out, c.String())
	}
	return out
}

// CapabilitySetFromNames builds a set from wire names. Unknown names are not
// granted; they come back in unknown, in input order, for the caller to log.
func CapabilitySetFromNames(names []string) (set CapabilitySet, unknown []string) {
	for _, n := range names {
		if c, ok := ParseCapability(n); ok {
			set = set.With(c)
		} else {
			unknown = append(unknown, n)
		}
	}
	return set, unknown
}

// TaintRevoked is what untrusted content in context revokes: arbitrary
// egress and external mutation, both channels that carry model-authored
// bytes to where an attacker may read them.
const TaintRevoked = CapabilitySet(CapArbitraryEgress) | CapabilitySet(CapMutateExternal)

// ToolOrigin is a tool's registry provenance, the trust half of
// classification. Only operator registration (FirstParty,
// RegisteredConnector) earns the taint-immune fixed-connector class; a
// connector's own annotations never do.
type ToolOrigin uint8

// The closed origin vocabulary.
const (
	// OriginUnknown: anything unclassifiable; requires the full set.
	OriginUnknown ToolOrigin = iota
	// OriginLocalSandbox: a built-in confined to the sandbox.
	OriginLocalSandbox
	// OriginFetcher: a built-in fetcher to a model-chosen destination.
	OriginFetcher
	// OriginFirstParty: a built-in acting on first-party state through the
	// control plane.
	OriginFirstParty
	// OriginRegisteredConnector: a connector whose server the operator
	// registered.
	OriginRegisteredConnector
)

// AllToolOrigins lists every ToolOrigin.
var AllToolOrigins = []ToolOrigin{
	OriginUnknown, OriginLocalSandbox, OriginFetcher, OriginFirstParty, OriginRegisteredConnector,
}

// ToolProfile is the classification input for one tool: its MCP-style
// annotations plus its registry provenance.
type ToolProfile struct {
	Origin      ToolOrigin
	ReadOnly    bool // readOnlyHint
	Destructive bool // destructiveHint
	OpenWorld   bool // openWorldHint: drives taint, not requirements
}

// RequiredCapabilities derives what a call of a tool with profile p needs:
//   - local sandbox: local-read, plus local-write unless read-only;
//   - fetcher: arbitrary-egress, plus mutate-external when destructive;
//   - first-party or registered connector: fixed-connector-read, plus
//     mutate-external unless read-only and not destructive;
//   - unknown (or any origin outside the vocabulary): the full set.
//
// OpenWorld is not consulted. Source: seed 003 required_capabilities.
func RequiredCapabilities(p ToolProfile) CapabilitySet {
	switch p.Origin {
	case OriginLocalSandbox:
		if p.ReadOnly {
			return SetOf(CapLocalRead)
		}
		return SetOf(CapLocalRead, CapLocalWrite)
	case OriginFetcher:
		if p.Destructive {
			return SetOf(CapArbitraryEgress, CapMutateExternal)
		}
		return SetOf(CapArbitraryEgress)
	case OriginFirstParty, OriginRegisteredConnector:
		if p.ReadOnly && !p.Destructive {
			return SetOf(CapFixedConnectorRead)
		}
		return SetOf(CapFixedConnectorRead, CapMutateExternal)
	}
	return AllCapabilitySet()
}

// MonotonicRedeclaration merges a connector's re-declared profile into the
// old one so a re-declaration can only add requirements: read-only only if
// both say so, destructive and open-world if either does, and the origin
// always the old one (provenance is the operator's, never the connector's).
// RequiredCapabilities of the result is a superset of the old requirement.
// Source: seed 003 monotonic_redeclaration.
func MonotonicRedeclaration(old, redeclared ToolProfile) ToolProfile {
	return ToolProfile{
		Origin:      old.Origin,
		ReadOnly:    old.ReadOnly && redeclared.ReadOnly,
		Destructive: old.Destructive || redeclared.Destructive,
		OpenWorld:   old.OpenWorld || redeclared.OpenWorld,
	}
}

// TaintState says whether untrusted content is in the conversation.
type TaintState uint8

// The closed taint vocabulary.
const (
	TaintClean   TaintState = iota // no untrusted content in context
	TaintTainted                   // untrusted content in context
)

// AllTaintStates lists every TaintState.
var AllTaintStates = []TaintState{TaintClean, TaintTainted}

// GrantPolicy is the operator-controlled half of grant derivation.
type GrantPolicy struct {
	// Base is granted on a clean context.
	Base CapabilitySet
	// TaintResilient survives the taint subtraction; never beyond Base.
	TaintResilient CapabilitySet
}

// DefaultGrantPolicy grants everything on a clean context and nothing
// taint-resilient.
func DefaultGrantPolicy() GrantPolicy { return GrantPolicy{Base: AllCapabilitySet()} }

// GrantedCapabilities derives the grant for one decision: Base when clean;
// when tainted (or any state other than clean: fail closed), Base minus
// TaintRevoked, plus the members of TaintRevoked that are both
// taint-resilient and in Base. Tainting never adds a capability. Recompute
// per call: taint can arrive mid-turn. Source: seed 003.
func GrantedCapabilities(p GrantPolicy, t TaintState) CapabilitySet {
	if t == TaintClean {
		return p.Base
	}
	survivors := p.TaintResilient.Intersect(TaintRevoked).Intersect(p.Base)
	return p.Base.Difference(TaintRevoked).Union(survivors)
}

// TransformKind is the argument transform a dispatch policy asked for.
type TransformKind uint8

// The closed transform vocabulary.
const (
	TransformNone    TransformKind = iota // run as proposed
	TransformRewrite                      // run with replacement arguments
	TransformInject                       // prepend an internal-only note, then run
)

// AllTransformKinds lists every TransformKind.
var AllTransformKinds = []TransformKind{TransformNone, TransformRewrite, TransformInject}

// CallPolicy is the per-call policy verdicts Decide folds into one outcome,
// already evaluated against the call's arguments by the caller.
type CallPolicy struct {
	// Vetoed blocks the call outright with VetoReason (which may be empty);
	// a human cannot override it. Takes precedence over everything.
	Vetoed     bool
	VetoReason string
	// RequiresHuman: the policy demands a human decision regardless of
	// capabilities.
	RequiresHuman bool
	// SandboxEscalation: the sandbox would deny the call and the deployment
	// escalates such denials to a human.
	SandboxEscalation bool
	// Transform and TransformText (replacement args JSON, or the note) are
	// honoured only when the call is otherwise allowed.
	Transform     TransformKind
	TransformText string
}

// OutcomeKind is the kind of a gate outcome; its string is the telemetry
// label.
type OutcomeKind string

// The closed outcome vocabulary.
const (
	OutcomeAllow         OutcomeKind = "allow"          // run as proposed
	OutcomeModify        OutcomeKind = "modify"         // run with Text as the arguments
	OutcomeInjectContext OutcomeKind = "inject_context" // prepend Text, then run
	OutcomeEscalate      OutcomeKind = "escalate"       // ask a human: Text is the reason
	OutcomeDeny          OutcomeKind = "deny"           // block; Text goes back to the model
)

// AllOutcomeKinds lists every OutcomeKind.
var AllOutcomeKinds = []OutcomeKind{OutcomeAllow, OutcomeModify, OutcomeInjectContext, OutcomeEscalate, OutcomeDeny}

// GateOutcome is the single decision for one tool call.
type GateOutcome struct {
	Kind OutcomeKind
	// Text: Modify's arguments, InjectContext's note, Escalate's reason
	// (empty for a policy/sandbox escalation), Deny's reason.
	Text string
	// Missing: the required capabilities not granted (Escalate only).
	Missing CapabilitySet
}

// Decide compares what a call requires with what it is granted, under the
// call's policy verdicts. Precedence (seed 003 decide):
//  1. a veto → Deny with the veto reason;
//  2. required ⊄ granted → Escalate with the missing set and
//     EscalationReason;
//  3. requires-human or sandbox escalation → Escalate, empty reason and set;
//  4. the transform (Modify / InjectContext), else Allow. An unknown
//     transform kind escalates (fail closed).
//
// Decide is set algebra only: it never inspects a specific capability, so
// growing the taxonomy needs no change here.
func Decide(required, granted CapabilitySet, p CallPolicy, tool string) GateOutcome {
	if p.Vetoed {
		return GateOutcome{Kind: OutcomeDeny, Text: p.VetoReason}
	}
	if missing := required.Difference(granted); !missing.IsEmpty() {
		return GateOutcome{Kind: OutcomeEscalate, Text: EscalationReason(tool, missing), Missing: missing}
	}
	if p.RequiresHuman || p.SandboxEscalation {
		return GateOutcome{Kind: OutcomeEscalate}
	}
	switch p.Transform {
	case TransformNone:
		return GateOutcome{Kind: OutcomeAllow}
	case TransformRewrite:
		return GateOutcome{Kind: OutcomeModify, Text: p.TransformText}
	case TransformInject:
		return GateOutcome{Kind: OutcomeInjectContext, Text: p.TransformText}
	}
	return GateOutcome{Kind: OutcomeEscalate}
}

// EscalationReason is the plain-language approval-card text for a
// missing-capability escalation, one wording on every surface. It names the
// cause (outside content) when egress or external mutation is missing.
func EscalationReason(tool string, missing CapabilitySet) string {
	egress, mutates := missing.Contains(CapArbitraryEgress), missing.Contains(CapMutateExternal)
	const tainted = "this conversation has taken in content from outside sources, so `%s` needs a quick human check before it "
	switch {
	case egress && mutates:
		return fmt.Sprintf(tainted+"sends anything out or changes anything beyond this conversation", tool)
	case egress:
		return fmt.Sprintf(tainted+"reaches an outside address", tool)
	case mutates:
		return fmt.Sprintf(tainted+"changes anything beyond this conversation", tool)
	}
	return fmt.Sprintf("`%s` needs more access than this conversation currently has, so a human check is needed first", tool)
}
