package harness

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCapabilityWireNamesRoundTrip(t *testing.T) {
	want := []string{"local-read", "local-write", "fixed-connector-read", "arbitrary-egress", "mutate-external"}
	for i, c := range AllCapabilities {
		if c.String() != want[i] {
			t.Errorf("%d: %q", i, c.String())
		}
		if got, ok := ParseCapability(c.String()); !ok || got != c {
			t.Errorf("ParseCapability(%q) = %v, %v", c, got, ok)
		}
	}
	for _, s := range []string{"", "Local-Read", "local_read", "all"} {
		if _, ok := ParseCapability(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
	set, unknown := CapabilitySetFromNames([]string{"local-read", "typo", "mutate-external", "LOCAL-WRITE"})
	if set != SetOf(CapLocalRead, CapMutateExternal) || !reflect.DeepEqual(unknown, []string{"typo", "LOCAL-WRITE"}) {
		t.Fatalf("got %v %v", set, unknown)
	}
	if !reflect.DeepEqual(set.Names(), []string{"local-read", "mutate-external"}) {
		t.Fatal(set.Names())
	}
	all := AllCapabilitySet()
	back, unk := CapabilitySetFromNames(all.Names())
	if back != all || unk != nil || len(all.Members()) != len(AllCapabilities) {
		t.Fatal("AllCapabilitySet does not round-trip")
	}
}

func TestTaintRevokesEgressAndExternalMutation(t *testing.T) {
	if TaintRevoked != SetOf(CapArbitraryEgress, CapMutateExternal) {
		t.Fatal(TaintRevoked.Names())
	}
	got := GrantedCapabilities(DefaultGrantPolicy(), TaintTainted)
	if got != SetOf(CapLocalRead, CapLocalWrite, CapFixedConnectorRead) {
		t.Fatalf("tainted default grant %v", got.Names())
	}
	if GrantedCapabilities(DefaultGrantPolicy(), TaintClean) != AllCapabilitySet() {
		t.Fatal("clean default grant is not everything")
	}
	// A declared taint-resilient member survives; it never exceeds the base.
	p := GrantPolicy{Base: AllCapabilitySet(), TaintResilient: SetOf(CapMutateExternal)}
	if !GrantedCapabilities(p, TaintTainted).Contains(CapMutateExternal) || GrantedCapabilities(p, TaintTainted).Contains(CapArbitraryEgress) {
		t.Fatal("resilient survivor wrong")
	}
	narrow := GrantPolicy{Base: SetOf(CapLocalRead), TaintResilient: AllCapabilitySet()}
	if GrantedCapabilities(narrow, TaintTainted) != SetOf(CapLocalRead) {
		t.Fatal("taint-resilient granted beyond the base")
	}
}

// Exhaustive over every policy (32 × 32 sets) and taint state.
func TestTaintNeverAddsCapability(t *testing.T) {
	all := AllCapabilitySet()
	for base := CapabilitySet(0); base <= all; base++ {
		for res := CapabilitySet(0); res <= all; res++ {
			p := GrantPolicy{Base: base, TaintResilient: res}
			clean, tainted := GrantedCapabilities(p, TaintClean), GrantedCapabilities(p, TaintTainted)
			if !tainted.SubsetOf(clean) || !clean.SubsetOf(base) {
				t.Fatalf("base %v res %v: clean %v tainted %v", base, res, clean, tainted)
			}
			if !tainted.Difference(TaintRevoked.Intersect(res)).SubsetOf(base.Difference(TaintRevoked)) {
				t.Fatalf("taint kept a revoked capability not declared resilient")
			}
			// Any state other than clean is treated as tainted.
			if GrantedCapabilities(p, TaintState(7)) != tainted {
				t.Fatal("unknown taint state is not fail-closed")
			}
		}
	}
}

func TestRequiredCapabilitiesMapping(t *testing.T) {
	for _, tc := range []struct {
		p    ToolProfile
		want CapabilitySet
	}{
		{ToolProfile{Origin: OriginLocalSandbox, ReadOnly: true}, SetOf(CapLocalRead)},
		{ToolProfile{Origin: OriginLocalSandbox, Destructive: true}, SetOf(CapLocalRead, CapLocalWrite)},
		{ToolProfile{Origin: OriginFetcher, ReadOnly: true}, SetOf(CapArbitraryEgress)},
		{ToolProfile{Origin: OriginFetcher, Destructive: true}, SetOf(CapArbitraryEgress, CapMutateExternal)},
		{ToolProfile{Origin: OriginFirstParty, ReadOnly: true}, SetOf(CapFixedConnectorRead)},
		{ToolProfile{Origin: OriginFirstParty, ReadOnly: true, Destructive: true}, SetOf(CapFixedConnectorRead, CapMutateExternal)},
		{ToolProfile{Origin: OriginRegisteredConnector, ReadOnly: true, OpenWorld: true}, SetOf(CapFixedConnectorRead)},
		{ToolProfile{Origin: OriginRegisteredConnector}, SetOf(CapFixedConnectorRead, CapMutateExternal)},
		{ToolProfile{Origin: OriginUnknown, ReadOnly: true}, AllCapabilitySet()},
		{ToolProfile{Origin: ToolOrigin(99), ReadOnly: true}, AllCapabilitySet()},
		{ToolProfile{}, AllCapabilitySet()},
	} {
		if got := RequiredCapabilities(tc.p); got != tc.want {
			t.Errorf("%+v: %v want %v", tc.p, got.Names(), tc.want.Names())
		}
	}
	// open_world never changes the requirement.
	for _, o := range AllToolOrigins {
		for bits := 0; bits < 4; bits++ {
			p := ToolProfile{Origin: o, ReadOnly: bits&1 != 0, Destructive: bits&2 != 0}
			q := p
			q.OpenWorld = true
			if RequiredCapabilities(p) != RequiredCapabilities(q) {
				t.Errorf("open_world changed %+v", p)
			}
		}
	}
}

func genProfile() *rapid.Generator[ToolProfile] {
	return rapid.Custom(func(t *rapid.T) ToolProfile {
		return ToolProfile{
			Origin:      rapid.SampledFrom(AllToolOrigins).Draw(t, "origin"),
			ReadOnly:    rapid.Bool().Draw(t, "ro"),
			Destructive: rapid.Bool().Draw(t, "destructive"),
			OpenWorld:   rapid.Bool().Draw(t, "open"),
		}
	})
}

func TestRedeclarationNeverRemovesARequirement(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old, redeclared := genProfile().Draw(t, "old"), genProfile().Draw(t, "new")
		merged := MonotonicRedeclaration(old, redeclared)
		if !RequiredCapabilities(old).SubsetOf(RequiredCapabilities(merged)) {
			t.Fatalf("%+v + %+v = %+v lost a requirement", old, redeclared, merged)
		}
		if merged.Origin != old.Origin {
			t.Fatal("a re-declaration changed the origin")
		}
		if merged.ReadOnly && !old.ReadOnly || !merged.Destructive && old.Destructive || !merged.OpenWorld && old.OpenWorld {
			t.Fatal("a re-declaration made an annotation more trusted")
		}
		// Chained re-declarations stay monotonic.
		again := MonotonicRedeclaration(merged, genProfile().Draw(t, "again"))
		if !RequiredCapabilities(merged).SubsetOf(RequiredCapabilities(again)) {
			t.Fatal("chained re-declaration lost a requirement")
		}
	})
}

func TestDecidePrecedence(t *testing.T) {
	all := AllCapabilitySet()
	for req := CapabilitySet(0); req <= all; req++ {
		for granted := CapabilitySet(0); granted <= all; granted++ {
			for flags := 0; flags < 16; flags++ {
				p := CallPolicy{Vetoed: flags&1 != 0, VetoReason: "no", RequiresHuman: flags&2 != 0,
					SandboxEscalation: flags&4 != 0, Transform: TransformKind(flags >> 3 * 2), TransformText: "x"}
				got := Decide(req, granted, p, "tool")
				missing := req.Difference(granted)
				switch {
				case p.Vetoed:
					if got != (GateOutcome{Kind: OutcomeDeny, Text: "no"}) {
						t.Fatalf("veto: %+v", got)
					}
				case !missing.IsEmpty():
					if got.Kind != OutcomeEscalate || got.Missing != missing || got.Text != EscalationReason("tool", missing) {
						t.Fatalf("missing: %+v", got)
					}
				case p.RequiresHuman || p.SandboxEscalation:
					if got != (GateOutcome{Kind: OutcomeEscalate}) {
						t.Fatalf("human: %+v", got)
					}
				case p.Transform == TransformInject:
					if got != (GateOutcome{Kind: OutcomeInjectContext, Text: "x"}) {
						t.Fatalf("inject: %+v", got)
					}
				default:
					if got != (GateOutcome{Kind: OutcomeAllow}) {
						t.Fatalf("allow: %+v", got)
					}
				}
			}
		}
	}
	if got := Decide(0, 0, CallPolicy{Transform: TransformRewrite, TransformText: `{"a":1}`}, "t"); got != (GateOutcome{Kind: OutcomeModify, Text: `{"a":1}`}) {
		t.Fatalf("rewrite: %+v", got)
	}
	if got := Decide(0, 0, CallPolicy{Transform: TransformKind(42)}, "t"); got.Kind != OutcomeEscalate {
		t.Fatalf("unknown transform: %+v", got)
	}
	// A veto with an empty reason still denies.
	if got := Decide(0, all, CallPolicy{Vetoed: true}, "t"); got.Kind != OutcomeDeny {
		t.Fatalf("empty veto: %+v", got)
	}
}

// Decide is pure set algebra: a bit outside today's taxonomy (a future
// capability) is gated like any other without changing Decide.
func TestDecideIsGenericOverTheTaxonomy(t *testing.T) {
	future := CapabilitySet(1 << 7)
	got := Decide(future, AllCapabilitySet(), CallPolicy{}, "t")
	if got.Kind != OutcomeEscalate || got.Missing != future {
		t.Fatalf("%+v", got)
	}
	if got := Decide(future, future, CallPolicy{}, "t"); got.Kind != OutcomeAllow {
		t.Fatalf("%+v", got)
	}
}

func TestEscalationReasons(t *testing.T) {
	both := EscalationReason("post", SetOf(CapArbitraryEgress, CapMutateExternal))
	egress := EscalationReason("fetch", SetOf(CapArbitraryEgress))
	mutate := EscalationReason("file_issue", SetOf(CapMutateExternal, CapLocalRead))
	other := EscalationReason("edit", SetOf(CapLocalWrite))
	for _, tc := range []struct{ got, tool, has string }{
		{both, "post", "sends anything out or changes anything beyond this conversation"},
		{egress, "fetch", "reaches an outside address"},
		{mutate, "file_issue", "changes anything beyond this conversation"},
		{other, "edit", "needs more access than this conversation currently has"},
	} {
		if !strings.Contains(tc.got, "`"+tc.tool+"`") || !strings.Contains(tc.got, tc.has) {
			t.Errorf("%q", tc.got)
		}
	}
	for _, r := range []string{both, egress, mutate} {
		if !strings.HasPrefix(r, "this conversation has taken in content from outside sources") {
			t.Errorf("%q does not name the cause", r)
		}
	}
	labels := []string{}
	for _, k := range AllOutcomeKinds {
		labels = append(labels, string(k))
	}
	if strings.Join(labels, ",") != "allow,modify,inject_context,escalate,deny" {
		t.Fatal(labels)
	}
}
