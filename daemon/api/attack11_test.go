package api_test

// attack11: JSON tricks on the API's "role". The test FAILS while an
// explicitly given role can be dropped in favour of the default (general,
// the widest role) by the way the body is spelled.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestAttack11RoleDroppedByJSONSpelling: README: a role name given through
// the API's "role" that is not a role is an error (400) "never a fallback to
// another role"; only leaving the role out selects general. Go's decoder
// takes the last of duplicate keys and matches keys case-insensitively, and
// "role": null counts as absent (TestRegisterRefusesUnknownAndEmptyRole
// accepts that on its own). Together, a body that does name a role
// (reviewer: no network, no write) registers as general: no restriction.
func TestAttack11RoleDroppedByJSONSpelling(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	ctx := context.Background()
	for i, body := range []string{
		`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","role":null}`,
		`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","ROLE":null}`,
		`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","Role":"general"}`,
	} {
		body = fmt.Sprintf(body, i, i)
		id := fmt.Sprintf("d%d", i)
		cgs.Add("/c/" + id)
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body))
		if status != http.StatusCreated {
			t.Logf("%s: %d %s (refused: fine)", body, status, eb.Error)
			continue
		}
		s, err := ts.client.Surface(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Role != "reviewer" {
			t.Errorf("FALLBACK: %s registered as role %q, kernel %s (the body names reviewer: want reviewer or 400)", body, s.Role, s.Kernel)
		}
	}
}

// TestAttack11CeilingDroppedByDuplicateKey: the same for "ceiling": a
// body that names network=false,write=false and then repeats the key (any
// case) with "" or null registers with no restriction at all. The API
// accepts it silently (Go's decoder: last key wins, case-insensitive).
func TestAttack11CeilingDroppedByDuplicateKey(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	ctx := context.Background()
	for i, body := range []string{
		`{"id":"e%d","cgroup":"/c/e%d","ceiling":"network=false,write=false","ceiling":null}`,
		`{"id":"e%d","cgroup":"/c/e%d","ceiling":"network=false,write=false","CEILING":""}`,
	} {
		body = fmt.Sprintf(body, i, i)
		id := fmt.Sprintf("e%d", i)
		cgs.Add("/c/" + id)
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body))
		if status != http.StatusCreated {
			t.Logf("%s: %d %s (refused: fine)", body, status, eb.Error)
			continue
		}
		c, err := ts.client.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.Kernel.Network || c.Kernel.Write {
			t.Errorf("DROPPED: %s registered with kernel %s (the body names network=false,write=false)", body, c.Kernel)
		}
	}
}
