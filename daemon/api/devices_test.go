package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/ownterm"
)

// TestRegisterAllowDevices: allow_devices is decoded strictly (a list of
// strings, the exact key, once), a bad list is 400 naming allow_devices
// with nothing registered, and a good one reaches the entry and the
// answers (registration, list).
func TestRegisterAllowDevices(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	for body, says := range map[string]string{
		`"allow_devices":"c 1:3"`:               "allow_devices",
		`"allow_devices":[3]`:                   "allow_devices",
		`"Allow_Devices":["c 1:3"]`:             `did you mean "allow_devices"`,
		`"allow_devices":[],"allow_devices":[]`: `duplicate key "allow_devices"`,
		`"allow_devices":["c 195:*"]`:           "wildcards",
		`"allow_devices":["c 1:3","c 1:3"]`:     "listed twice",
		`"allow_devices":["dev/null"]`:          "must be absolute",
		`"allow_devices":["/etc/hostname"]`:     "not a device node",
		`"allow_devices":["/dev/null","c 1:3"]`: "listed twice",
		`"own_terminals":"mine"`:                "own_terminals",
		`"own_terminals":"init"`:                "init_pid",
		`"deny_console_egress":"yes"`:           "deny_console_egress",
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x",`+body+`}`))
		if status != http.StatusBadRequest || !strings.Contains(eb.Error, says) {
			t.Errorf("%s: status %d (%s), want 400 naming %q", body, status, eb.Error, says)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: registered", body)
		}
	}
	ctx := context.Background()
	c, err := ts.client.Register(ctx, api.RegisterRequest{ID: "x", Cgroup: "/c/x", AllowDevices: []string{"c 226:128", "/dev/null"}, DenyConsoleEgress: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c 226:128", "c 1:3 (/dev/null)"}
	if fmt.Sprint(c.AllowDevices) != fmt.Sprint(want) || !c.DenyConsoleEgress {
		t.Errorf("answer: allow_devices %q, deny_console_egress %t; want %q, true", c.AllowDevices, c.DenyConsoleEgress, want)
	}
	en, err := enf.Lookup(c.CgroupID)
	if err != nil || fmt.Sprint(en.AllowDevices) != fmt.Sprint([]entry.Device{{Dev: 226<<20 | 128}, {Dev: 1<<20 | 3}}) || !en.DenyConsoleEgress {
		t.Errorf("entry: %+v, %v", en, err)
	}
	list, err := ts.client.List(ctx)
	if err != nil || len(list) != 1 || fmt.Sprint(list[0].AllowDevices) != fmt.Sprint(want) {
		t.Errorf("list %+v, %v", list, err)
	}
}

// TestRegisterOwnTerminalsOfClient: own_terminals "client" declares the
// requesting process's terminals (here the test's own).
func TestRegisterOwnTerminalsOfClient(t *testing.T) {
	mine, err := ownterm.Self()
	if err != nil {
		t.Fatal(err)
	}
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	c, err := ts.client.Register(context.Background(), api.RegisterRequest{ID: "x", Cgroup: "/c/x", OwnTerminals: api.OwnTerminalsClient})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Terminals) != fmt.Sprint(ownterm.Strings(mine)) {
		t.Errorf("terminals %q, want the client's %q", c.Terminals, ownterm.Strings(mine))
	}
	en, err := enf.Lookup(c.CgroupID)
	if err != nil || fmt.Sprint(en.Terminals) != fmt.Sprint(mine) {
		t.Errorf("entry terminals %v, %v; want %v", en.Terminals, err, mine)
	}
}
