package proxy

import "testing"

func TestAllReasonsHaveStatus(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range AllReasons {
		if seen[r] {
			t.Fatalf("duplicate %s", r)
		}
		seen[r] = true
		if s := statusOf(r); (r == ReasonAllowed) != (s == 200) {
			t.Errorf("%s: status %d", r, s)
		}
	}
	if len(AllReasons) != 11 {
		t.Fatalf("AllReasons has %d entries: update it, statusOf and the docs together", len(AllReasons))
	}
}
