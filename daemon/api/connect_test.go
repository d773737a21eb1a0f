package api_test

// allow_connect: the request field, its 400s (naming the field, nothing
// registered), the answer and list, the state file, and the meet with a
// parent's list.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

func TestAllowConnect(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/p")
	cgs.Add("/c/k")
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := ts.client.Register(ctx, api.RegisterRequest{ID: "p", Cgroup: "/c/p", Ceiling: "network=false",
		AllowConnect: []string{"tcp:10.0.0.1:443", "tcp:10.0.0.2:443", "unix:" + sock}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tcp:10.0.0.1:443", "tcp:10.0.0.2:443", "unix:" + sock}; !reflect.DeepEqual(p.AllowConnect, want) {
		t.Errorf("answer allow_connect = %q, want %q", p.AllowConnect, want)
	}
	en, _ := enf.Lookup(p.CgroupID)
	if len(en.AllowConnect) != 3 || en.AllowConnect[2].Ino == 0 {
		t.Errorf("map entry %+v: want three endpoints, the unix one resolved", en.AllowConnect)
	}
	// The child lists B and C; only B is what it may reach.
	k, err := ts.client.Register(ctx, api.RegisterRequest{ID: "k", Cgroup: "/c/k", Parent: "p",
		AllowConnect: []string{"tcp:10.0.0.2:443", "tcp:[::ffff:10.0.0.3]:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tcp:10.0.0.2:443"}; !reflect.DeepEqual(k.AllowConnect, want) {
		t.Errorf("child allow_connect = %q, want the meet %q", k.AllowConnect, want)
	}
	list, err := ts.client.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	cs, err := state.Load(ts.state)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == "p" && (len(c.AllowConnect) != 3 || !endpoint.Same(c.AllowConnect[2], en.AllowConnect[2])) {
			t.Errorf("state file keeps %+v, want the accepted list", c.AllowConnect)
		}
	}
}

func TestAllowConnectBadInput(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	file := filepath.Join(t.TempDir(), "f")
	var many []string
	for i := 0; i < 17; i++ {
		many = append(many, fmt.Sprintf("%q", fmt.Sprintf("tcp:127.0.0.1:%d", 1000+i)))
	}
	for _, body := range []string{
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","allow_connect":["tcp:localhost:80"]}`,
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","allow_connect":["udp:127.0.0.1:0"]}`,
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","allow_connect":["unix:` + file + `"]}`,
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","allow_connect":[` + strings.Join(many, ",") + `]}`,
		`{"id":"x","cgroup":"/c/x","allow_connect":["tcp:127.0.0.1:80"]}`,
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","allow_connect":"tcp:127.0.0.1:80"}`,
		`{"id":"x","cgroup":"/c/x","ceiling":"network=false","activate":"exec","allow_connect":["unix:/run/x.sock"]}`,
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body))
		if status != 400 || !strings.Contains(eb.Error, "allow_connect") {
			t.Errorf("%.120s: %d %q, want 400 naming allow_connect", body, status, eb.Error)
		}
	}
	if enf.Len() != 0 || len(ts.reg.List()) != 0 {
		t.Fatal("a refused request left state behind")
	}
}

// TestAllowConnectNestedByCgroup: a container nested by cgroup alone (no
// parent) is answered with the meet the kernel takes over every registered
// ancestor cgroup: a daemon registration's list, and an entry in the map
// the daemon did not make (enforcerd run) by its own list; a network=false
// ancestor without a list leaves nothing.
func TestAllowConnectNestedByCgroup(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	ctx := context.Background()
	cgs.Add("/o/in/k")
	cgs.Add("/bare/k")
	if _, err := ts.client.Register(ctx, api.RegisterRequest{ID: "outer", Cgroup: "/o", Ceiling: "network=false",
		AllowConnect: []string{"tcp:10.0.0.1:443", "tcp:10.0.0.2:443", "udp:10.0.0.9:53"}}); err != nil {
		t.Fatal(err)
	}
	// An entry written by another program (enforcerd run) at /o/in.
	in, err := cgs.Open("/o/in")
	if err != nil {
		t.Fatal(err)
	}
	eps, err := endpoint.ParseList([]string{"tcp:10.0.0.2:443", "udp:10.0.0.9:53"})
	if err != nil {
		t.Fatal(err)
	}
	if err := enf.Register(in, entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, AllowConnect: eps}); err != nil {
		t.Fatal(err)
	}
	k, err := ts.client.Register(ctx, api.RegisterRequest{ID: "k", Cgroup: "/o/in/k", Ceiling: "network=false",
		AllowConnect: []string{"tcp:10.0.0.1:443", "tcp:10.0.0.2:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tcp:10.0.0.2:443"}; !reflect.DeepEqual(k.AllowConnect, want) {
		t.Errorf("nested by cgroup: allow_connect = %q, want the meet with both ancestors %q", k.AllowConnect, want)
	}
	// A network=false ancestor without a list: nothing is reachable.
	if _, err := ts.client.Register(ctx, api.RegisterRequest{ID: "bare", Cgroup: "/bare", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	b, err := ts.client.Register(ctx, api.RegisterRequest{ID: "bk", Cgroup: "/bare/k", Ceiling: "network=false",
		AllowConnect: []string{"tcp:10.0.0.1:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.AllowConnect) != 0 {
		t.Errorf("under a network=false ancestor without a list: allow_connect = %q, want none", b.AllowConnect)
	}
}
