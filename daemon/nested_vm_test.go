package daemon_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
)

// TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies: README:
// "surface's tool lists never offer a tool the kernel ceiling makes fail:
// with write=false no Write, Edit, ...". A container registered (API or
// hook) in a cgroup below another registered container, without "parent",
// is held by the kernel to the meet of both (design.md: "sub-cgroups and
// nested containers never widen anything"). The daemon used to compute its
// ceiling, "kernel", and GET /surface from its own registration only (the
// response said write=true and the surface offered Write and Edit while
// every write of its processes was denied by the outer ceiling); its
// answer is now the meet the kernel enforces.
func TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19483")
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()
	outer, inner := "/vmtest-att11/outer", "/vmtest-att11/outer/inner"
	w := startWorkload(t, e, inner, "att11-nested")
	defer removeGroup(e, "/vmtest-att11")
	defer removeGroup(e, outer)
	defer removeGroup(e, inner)
	defer w.stop()
	w.waitFor(t, 2)
	if _, err := client.Register(ctx, api.RegisterRequest{ID: "att11-outer", Cgroup: outer, Ceiling: "write=false"}); err != nil {
		t.Fatal(err)
	}
	c, err := client.Register(ctx, api.RegisterRequest{ID: "att11-inner", Cgroup: inner, Role: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.Surface(ctx, "att11-inner")
	if err != nil {
		t.Fatal(err)
	}
	n := len(w.snapshot())
	lines := w.waitFor(t, n+6)[n+1:]
	denied := 0
	for _, l := range lines {
		if strings.Contains(l, "write=denied") {
			denied++
		}
	}
	t.Logf("inner: registration kernel %s; surface kernel %s builtin_tools %v; workload: %v", c.Kernel, s.Kernel, s.BuiltinTools, lines)
	if denied != len(lines) {
		t.Fatalf("the outer write=false should deny the inner workload's writes (meet over ancestors): %v", lines)
	}
	for _, tool := range []string{"Write", "Edit"} {
		if slices.Contains(s.BuiltinTools, tool) {
			t.Errorf("MISLEADING: GET /v1/containers/att11-inner/surface offers %s (kernel %s in the answer, %s in the registration response) "+
				"while the kernel denies every write of the container's processes (outer registered cgroup %s, write=false)",
				tool, s.Kernel, c.Kernel, outer)
		}
	}
	if c.Kernel.Write || s.Kernel.Write {
		t.Errorf("the registration response (kernel %s) and the surface (kernel %s) must say write=false, as the kernel enforces", c.Kernel, s.Kernel)
	}
	if list, err := client.List(ctx); err != nil {
		t.Fatal(err)
	} else {
		for _, x := range list {
			if x.ID == "att11-inner" && x.Kernel.Write {
				t.Errorf("the list answers att11-inner with kernel %s, want write=false", x.Kernel)
			}
		}
	}
}
