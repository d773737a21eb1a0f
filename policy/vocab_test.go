package policy

import (
	"testing"

	"github.com/enforcerd/enforcerd/test/vocabtest"
)

// Closed vocabularies: each All list names every declared constant of its
// type (vocabtest.Exhaustive), once.

func TestAllListsCoverEveryVariant(t *testing.T) {
	vocabtest.Exhaustive(t, "Shell", AllShells, 3)
	vocabtest.Exhaustive(t, "Role", AllRoles, 8)
	vocabtest.Exhaustive(t, "RoleSource", AllRoleSources, 5)
	vocabtest.Exhaustive(t, "DenyList", AllDenyLists, 5)
	vocabtest.Exhaustive(t, "WriteAuthority", AllWriteAuthorities, 2)
	vocabtest.Exhaustive(t, "ToolGroup", AllToolGroups, 9)
	vocabtest.Exhaustive(t, "AgentCapability", AllAgentCapabilities, 1)
}

// Every variant must have its name/description/behaviour defined: the
// per-variant switches are the other place a new variant must be added.
func TestEveryVariantIsDescribed(t *testing.T) {
	for _, s := range AllShells {
		if !s.Valid() {
			t.Errorf("shell %q not Valid", s)
		}
	}
	for _, r := range AllRoles {
		if !r.Valid() || r.Description() == "" {
			t.Errorf("role %q not Valid or undescribed", r)
		}
	}
	for _, d := range AllDenyLists {
		if len(d.Entries()) == 0 {
			t.Errorf("deny list %q has no entries", d)
		}
	}
	for _, g := range AllToolGroups {
		if !g.Valid() || g.Description() == "" {
			t.Errorf("tool group %q not Valid or undescribed", g)
		}
	}
	for _, c := range AllAgentCapabilities {
		if c.Description() == "" {
			t.Errorf("agent capability %q undescribed", c)
		}
	}
}
