package api_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
)

// TestRecentDenials: GET /v1/denials/recent returns the records the hub
// kept, oldest first, filtered by container or cgroup id (the process's
// or the deciding one); a bad filter is refused rather than ignored, and
// a confined caller is refused like for the stream.
func TestRecentDenials(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	cgs.Add("/c/a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := ts.client.Register(ctx, api.RegisterRequest{ID: "a", Cgroup: "/c/a", Ceiling: "network=false"})
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := ts.client.RecentDenials(ctx, api.DenialFilter{}); err != nil || recs == nil || len(recs) != 0 {
		t.Fatalf("no records: %v (nil %t), %v; want []", recs, recs == nil, err)
	}
	ts.hub.Publish(audit.Record{Container: "a", CgroupID: 5000, CeilingCgroupID: a.CgroupID, Hook: "socket_create"})
	ts.hub.Publish(audit.Record{Container: "other", CgroupID: 6000, CeilingCgroupID: 6000, Hook: "file_open"})
	for _, c := range []struct {
		f    api.DenialFilter
		want []string
	}{
		{api.DenialFilter{}, []string{"socket_create", "file_open"}},
		{api.DenialFilter{Container: "a"}, []string{"socket_create"}},
		{api.DenialFilter{CgroupID: 5000}, []string{"socket_create"}},
		{api.DenialFilter{CgroupID: a.CgroupID}, []string{"socket_create"}},
		{api.DenialFilter{CgroupID: 6000}, []string{"file_open"}},
		{api.DenialFilter{CgroupID: 1}, nil},
		{api.DenialFilter{Container: "a", CgroupID: 6000}, nil},
	} {
		recs, err := ts.client.RecentDenials(ctx, c.f)
		var hooks []string
		for _, r := range recs {
			hooks = append(hooks, r.Hook)
		}
		if err != nil || len(hooks) != len(c.want) || (len(hooks) > 0 && hooks[0] != c.want[0]) || (len(hooks) > 1 && hooks[1] != c.want[1]) {
			t.Errorf("%+v: %v, %v; want %v", c.f, hooks, err, c.want)
		}
	}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/v1/denials/recent?container=nope", 404},
		{"/v1/denials/recent?cgroup_id=x", 400},
		{"/v1/denials/recent?cgroup_id=-1", 400},
		{"/v1/denials/recent?container=a&container=a", 400},
		{"/v1/denials/recent?contianer=a", 400},
		{"/v1/denials?cgroup_id=x", 400},
		{"/v1/denials?contianer=a", 400},
		{"/v1/denials?container=nope", 404},
	} {
		if status, eb := ts.raw(t, "GET", c.path, nil); status != c.status || eb.Error == "" {
			t.Errorf("GET %s: %d %+v, want %d", c.path, status, eb, c.status)
		}
	}
	ts.setCaller("/c/a")
	var ae *api.Error
	if _, err := ts.client.RecentDenials(ctx, api.DenialFilter{Container: "a"}); !errors.As(err, &ae) || ae.Status != 403 {
		t.Errorf("confined caller: %v, want 403", err)
	}
}

// TestFollowByCgroupID: the stream's cgroup_id filter.
func TestFollowByCgroupID(t *testing.T) {
	ts, _, _ := fakeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan audit.Record, 4)
	go ts.client.FollowDenials(ctx, api.DenialFilter{CgroupID: 77}, func(r audit.Record) error { got <- r; return nil })
	for {
		ts.hub.Publish(audit.Record{Container: "x", CgroupID: 1, CeilingCgroupID: 2, Hook: "other"})
		ts.hub.Publish(audit.Record{Container: "x", CgroupID: 3, CeilingCgroupID: 77, Hook: "wanted"})
		select {
		case r := <-got:
			if r.Hook != "wanted" {
				t.Fatalf("followed %+v", r)
			}
			return
		case <-ctx.Done():
			t.Fatal("no record followed")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
