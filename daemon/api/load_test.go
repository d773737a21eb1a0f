package api_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// concurrently registers and unregisters n containers and checks map, state
// file and list agree (no leaks, no duplicates).
func concurrently(t *testing.T, ts *testServer, groups []string, ceiling string, mapLen func() int) {
	t.Helper()
	ctx := context.Background()
	n := len(groups)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	sem := make(chan struct{}, 64)
	// The point is correctness under concurrency, not latency: every
	// registration writes the state file under the registry's lock, so on
	// a loaded machine a request can wait long in the queue.
	client := api.NewClient(ts.socket, 2*time.Minute)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id := fmt.Sprintf("c%04d", i)
			if _, err := client.Register(ctx, api.RegisterRequest{ID: id, Cgroup: groups[i], Ceiling: ceiling}); err != nil {
				errs <- err
				return
			}
			// Same id again: must conflict, never duplicate.
			var ae *api.Error
			if _, err := client.Register(ctx, api.RegisterRequest{ID: id, Cgroup: groups[i], Ceiling: ceiling}); !errors.As(err, &ae) || ae.Status != 409 {
				errs <- fmt.Errorf("duplicate register of %s: %v", id, err)
			}
			if i%2 == 0 {
				if err := client.Unregister(ctx, id); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d registrations + %d duplicate attempts + %d unregistrations in %v", n, n, n/2, time.Since(start))
	list, err := ts.client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := state.Load(ts.state)
	if err != nil {
		t.Fatal(err)
	}
	want := n / 2
	if len(list) != want || len(onDisk) != want || mapLen() != want {
		t.Fatalf("after load: list %d, state %d, map %d; want %d each", len(list), len(onDisk), mapLen(), want)
	}
	seen := map[string]bool{}
	for i, c := range list {
		if seen[c.ID] || c.ID != onDisk[i].ID || c.CgroupID != onDisk[i].CgroupID {
			t.Fatalf("list and state disagree at %d: %v vs %v", i, c, onDisk[i])
		}
		seen[c.ID] = true
		if _, err := ts.enf.Lookup(c.CgroupID); err != nil {
			t.Fatalf("container %s missing from the map: %v", c.ID, err)
		}
	}
	for i := 0; i < n; i += 2 {
		if err := ts.client.Unregister(ctx, fmt.Sprintf("c%04d", i+1)); err != nil && i+1 < n {
			t.Fatal(err)
		}
	}
	if mapLen() != 0 || len(ts.reg.List()) != 0 {
		t.Fatalf("leak: map %d, list %d after unregistering all", mapLen(), len(ts.reg.List()))
	}
}

func TestThousandContainersConcurrently(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = fmt.Sprintf("/c/%d", i)
		cgs.Add(groups[i])
	}
	concurrently(t, ts, groups, "network=false", enf.Len)
}
