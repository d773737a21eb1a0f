package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/entry"
)

// TestRegisterWriteRoots: write_roots reach the entry and the answers
// (registration, list); a bad one is 400 naming write_roots, with nothing
// registered.
func TestRegisterWriteRoots(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := entry.WriteRootOf(work)
	if err != nil {
		t.Skipf("the test directory's filesystem cannot hold writable roots: %v", err)
	}
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	for body, says := range map[string]string{
		`"write_roots":["rel"]`:            "not an absolute path",
		`"write_roots":["` + dir + `/no"]`: "no such file",
		`"write_roots":"/a"`:               "write_roots",
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","ceiling":"write=false",`+body+`}`))
		if status != http.StatusBadRequest || !strings.Contains(eb.Error, "write_roots") || !strings.Contains(eb.Error, says) {
			t.Errorf("%s: status %d (%s), want 400 naming write_roots and %q", body, status, eb.Error, says)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: registered", body)
		}
	}
	status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","ceiling":"network=false","write_roots":["`+work+`"]}`))
	if status != http.StatusBadRequest || !strings.Contains(eb.Error, "write_roots") {
		t.Errorf("write allowed: status %d (%s), want 400 naming write_roots", status, eb.Error)
	}
	ctx := context.Background()
	c, err := ts.client.Register(ctx, api.RegisterRequest{ID: "x", Cgroup: "/c/x", Ceiling: "write=false", WriteRoots: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.WriteRoots) != 1 || c.WriteRoots[0] != work {
		t.Fatalf("answer roots %v", c.WriteRoots)
	}
	en, err := enf.Lookup(c.CgroupID)
	if err != nil || len(en.WriteRoots) != 1 || en.WriteRoots[0] != id {
		t.Fatalf("entry roots %v (%v), want [%v]", en.WriteRoots, err, id)
	}
	list, err := ts.client.List(ctx)
	if err != nil || len(list) != 1 || len(list[0].WriteRoots) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
}
