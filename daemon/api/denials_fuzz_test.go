package api

import (
	"net/url"
	"testing"
)

// FuzzDenialFilterQuery: the query the client builds for a filter is read
// back by the server as the same filter, whatever the container id holds
// (&, =, %, +, spaces, non-UTF-8); and parseDenialFilter never accepts a
// query it does not read whole.
func FuzzDenialFilterQuery(f *testing.F) {
	f.Add("", uint64(0), "")
	f.Add("a", uint64(7), "container=a&cgroup_id=7")
	f.Add("a&cgroup_id=1", uint64(0), "cgroup_id=1&cgroup_id=2")
	f.Add("x=y+z %20", uint64(18446744073709551615), "cgroup_id=18446744073709551616")
	f.Add("\xff", uint64(1), "contianer=a")
	f.Add("", uint64(0), "container=&cgroup_id=0x10")
	f.Fuzz(func(t *testing.T, container string, cgroupID uint64, raw string) {
		want := DenialFilter{Container: container, CgroupID: cgroupID}
		q, err := url.ParseQuery(trimQ(want.query()))
		if err != nil {
			t.Fatalf("query %q of %+v: %v", want.query(), want, err)
		}
		got, err := parseDenialFilter(q)
		if err != nil || got != want {
			t.Fatalf("%+v → %q → %+v, %v", want, want.query(), got, err)
		}
		if q, err := url.ParseQuery(raw); err == nil {
			if f, err := parseDenialFilter(q); err == nil {
				for k := range q {
					if k != "container" && k != "cgroup_id" {
						t.Fatalf("%q: accepted with key %q: %+v", raw, k, f)
					}
				}
			}
		}
	})
}

func trimQ(s string) string {
	if len(s) > 0 && s[0] == '?' {
		return s[1:]
	}
	return s
}
