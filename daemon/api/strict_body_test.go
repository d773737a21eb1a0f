package api_test

// JSON spelling of request bodies: a key given twice, or in another letter
// case, is 400 naming the key; it never drops a role or a ceiling the body
// names.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRegisterRoleNotDroppedByJSONSpelling: README: a role name given
// through the API's "role" that is not a role is an error (400) "never a
// fallback to another role"; only leaving the role out selects general.
// Go's decoder takes the last of duplicate keys and matches keys
// case-insensitively, and "role": null counts as absent: a body that names
// reviewer (no network, no write) and then repeats the key in any case
// would register as general. The API refuses such a body (400 naming the
// key).
func TestRegisterRoleNotDroppedByJSONSpelling(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	ctx := context.Background()
	for i, x := range []struct{ body, key string }{
		{`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","role":null}`, `"role"`},
		{`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","ROLE":null}`, `"ROLE"`},
		{`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","Role":"general"}`, `"Role"`},
		{`{"id":"d%d","cgroup":"/c/d%d","Role":"general","role":"reviewer"}`, `"Role"`},
		{`{"id":"d%d","cgroup":"/c/d%d","role":"reviewer","r\u006fle":"general"}`, `"role"`},
	} {
		body := fmt.Sprintf(x.body, i, i)
		id := fmt.Sprintf("d%d", i)
		cgs.Add("/c/" + id)
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body))
		if status != http.StatusCreated {
			t.Logf("%s: %d %s (refused: fine)", body, status, eb.Error)
			if status != http.StatusBadRequest || eb.Code != "bad_request" || !strings.Contains(eb.Error, x.key) {
				t.Errorf("%s: %d %s %q; want 400 bad_request naming the key %s", body, status, eb.Code, eb.Error, x.key)
			}
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

// TestCeilingNotDroppedByDuplicateKey: the same for "ceiling", at
// registration and narrowing: a body that names network=false,write=false
// and then repeats the key (any case) with "" or null would register, or
// narrow, with no restriction at all. The API refuses it (400 naming the
// key); nothing is registered or narrowed.
func TestCeilingNotDroppedByDuplicateKey(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	ctx := context.Background()
	for i, x := range []struct{ body, key string }{
		{`{"id":"e%d","cgroup":"/c/e%d","ceiling":"network=false,write=false","ceiling":null}`, `"ceiling"`},
		{`{"id":"e%d","cgroup":"/c/e%d","ceiling":"network=false,write=false","CEILING":""}`, `"CEILING"`},
		{`{"id":"e%d","cgroup":"/c/e%d","ceiling":"network=false,write=false","Ceiling":"network=true"}`, `"Ceiling"`},
	} {
		body := fmt.Sprintf(x.body, i, i)
		id := fmt.Sprintf("e%d", i)
		cgs.Add("/c/" + id)
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body))
		if status != http.StatusCreated {
			t.Logf("%s: %d %s (refused: fine)", body, status, eb.Error)
			if status != http.StatusBadRequest || !strings.Contains(eb.Error, x.key) {
				t.Errorf("%s: %d %q; want 400 naming the key %s", body, status, eb.Error, x.key)
			}
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
	if n := enf.Len(); n != 0 {
		t.Fatalf("%d map entries after refused registrations", n)
	}
	cgs.Add("/c/n")
	if _, err := ts.client.Narrow(ctx, "n", "write=false"); err == nil {
		t.Fatal("narrowed an unknown container")
	}
	status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"n","cgroup":"/c/n"}`))
	if status != http.StatusCreated {
		t.Fatalf("register n: %d %s", status, eb.Error)
	}
	for _, x := range []struct{ body, key string }{
		{`{"ceiling":"network=false,write=false","CEILING":""}`, `"CEILING"`},
		{`{"ceiling":"network=false,write=false","ceiling":"network=false"}`, `"ceiling"`},
		{`{"Ceiling":"write=false"}`, `"Ceiling"`},
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers/n/narrow", []byte(x.body))
		if status != http.StatusBadRequest || !strings.Contains(eb.Error, x.key) {
			t.Errorf("narrow %s: %d %q; want 400 naming the key %s", x.body, status, eb.Error, x.key)
		}
	}
	c, err := ts.client.Get(ctx, "n")
	if err != nil || !c.Kernel.Network || !c.Kernel.Write {
		t.Fatalf("after refused narrowings: %+v, %v; want unchanged", c.Kernel, err)
	}
}

// TestRequestBodiesAreStrict: nested objects too (the entrypoint the daemon
// vets under shell=none), and unknown keys are named.
func TestRequestBodiesAreStrict(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	cgs.Add("/c/s")
	for _, x := range []struct{ body, want string }{
		{`{"id":"s","cgroup":"/c/s","entrypoint":{"path":"agent","root":"/r","path":"/bin/sh"}}`, `duplicate key "entrypoint.path"`},
		{`{"id":"s","cgroup":"/c/s","entrypoint":{"path":"agent","root":"/r","Path":"sh"}}`, `unknown key "entrypoint.Path"`},
		{`{"id":"s","cgroup":"/c/s","bogus":1}`, `unknown key "bogus"`},
		{`{"id":"s","cgroup":"/c/s","id":"t"}`, `duplicate key "id"`},
		{`{"id":"s","cgroup":"/c/s","Activate":"exec"}`, `did you mean "activate"`},
		{`{"id":"s","cgroup":"/c/s"`, `unexpected end`},
		{`[{"id":"s","cgroup":"/c/s"}]`, `want a JSON object`},
		{`null`, `want a JSON object`},
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(x.body))
		if status != http.StatusBadRequest || !strings.Contains(eb.Error, x.want) {
			t.Errorf("%s: %d %q; want 400 with %q", x.body, status, eb.Error, x.want)
		}
	}
	status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"s","cgroup":"/c/s","role":null,"entrypoint":null}`))
	if status != http.StatusCreated {
		t.Fatalf("null role and entrypoint: %d %s", status, eb.Error)
	}
}
