package harness

import (
	"testing"

	"github.com/enforcerd/enforcerd/test/vocabtest"
)

// Closed vocabularies: each All list names every declared constant of its
// type (vocabtest.Exhaustive), once.

func TestHarnessListsCoverEveryVariant(t *testing.T) {
	vocabtest.Exhaustive(t, "Capability", AllCapabilities, 5)
	vocabtest.Exhaustive(t, "ToolOrigin", AllToolOrigins, 5)
	vocabtest.Exhaustive(t, "TaintState", AllTaintStates, 2)
	vocabtest.Exhaustive(t, "TransformKind", AllTransformKinds, 3)
	vocabtest.Exhaustive(t, "OutcomeKind", AllOutcomeKinds, 5)
	vocabtest.Exhaustive(t, "ApprovalOutcome", AllApprovalOutcomes, 3)
	vocabtest.Exhaustive(t, "RuleDecision", AllRuleDecisions, 3)
	vocabtest.Exhaustive(t, "ExtensionPermission", AllExtensionPermissions, 15)
	vocabtest.Exhaustive(t, "HookKind", AllHookKinds, 4)
}

// Every variant must have its name/behaviour defined: the per-variant
// switches are the other place a new variant must be added.
func TestHarnessVariantsAreDescribed(t *testing.T) {
	for _, c := range AllCapabilities {
		if c.String() == "" {
			t.Errorf("capability %d has no wire name", c)
		}
	}
	for _, p := range AllExtensionPermissions {
		if p.String() == "" {
			t.Errorf("extension permission %d has no wire name", p)
		}
	}
	for _, h := range AllHookKinds {
		if _, ok := h.RequiredPermission(); !ok {
			t.Errorf("hook %q has no required permission", h)
		}
	}
}
