package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

// DenialFilter selects denial records (GET /v1/denials and
// /v1/denials/recent): the zero value selects every record.
type DenialFilter struct {
	// Container: only records of this registered container (query
	// "container"; the daemon answers 404 when it is not registered).
	Container string
	// CgroupID: only records whose process cgroup (cgroup_id) or deciding
	// registered cgroup (ceiling_cgroup_id) has this cgroup id, the inode
	// number of the cgroup2 directory (query "cgroup_id", decimal; 0 is
	// no filter).
	CgroupID uint64
}

// Match reports whether r is selected.
func (f DenialFilter) Match(r audit.Record) bool {
	if f.Container != "" && r.Container != f.Container {
		return false
	}
	if f.CgroupID != 0 && r.CgroupID != f.CgroupID && r.CeilingCgroupID != f.CgroupID {
		return false
	}
	return true
}

// query is f as the endpoints' query string, "" or "?...".
func (f DenialFilter) query() string {
	q := ""
	add := func(k, v string) {
		if q == "" {
			q = "?"
		} else {
			q += "&"
		}
		q += k + "=" + v
	}
	if f.Container != "" {
		add("container", url.QueryEscape(f.Container))
	}
	if f.CgroupID != 0 {
		add("cgroup_id", strconv.FormatUint(f.CgroupID, 10))
	}
	return q
}

// parseDenialFilter reads the filter of a denials request from its query:
// an unknown key, a repeated one and a cgroup_id that is not a decimal
// uint64 are errors, so that a mistyped filter never widens the selection
// to every record.
func parseDenialFilter(q url.Values) (DenialFilter, error) {
	var f DenialFilter
	for k, v := range q {
		if len(v) != 1 {
			return f, fmt.Errorf("query %q given %d times", k, len(v))
		}
		switch k {
		case "container":
			f.Container = v[0]
		case "cgroup_id":
			id, err := strconv.ParseUint(v[0], 10, 64)
			if err != nil {
				return f, fmt.Errorf("query cgroup_id=%q: want a decimal cgroup id", v[0])
			}
			f.CgroupID = id
		default:
			return f, fmt.Errorf("unknown query %q (want container or cgroup_id)", k)
		}
	}
	return f, nil
}

// denialFilter reads the filter of a denials request (parseDenialFilter;
// bad_request) and refuses an unregistered container (not_found). On
// refusal the error response is written and ok is false.
func (s *Server) denialFilter(w http.ResponseWriter, r *http.Request) (f DenialFilter, ok bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		f, err = parseDenialFilter(q)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return f, false
	}
	if f.Container != "" {
		if _, err := s.Reg.Get(f.Container); err != nil {
			s.fail(w, err)
			return f, false
		}
	}
	return f, true
}

// recentDenials answers GET /v1/denials/recent: the records the hub kept
// (audit.RecentRecords at most) that the filter selects, oldest first.
func (s *Server) recentDenials(w http.ResponseWriter, r *http.Request) {
	if s.Hub == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "no denial stream")
		return
	}
	f, ok := s.denialFilter(w, r)
	if !ok {
		return
	}
	out := DenialsBody{Denials: []audit.Record{}}
	for _, rec := range s.Hub.Recent() {
		if f.Match(rec) {
			out.Denials = append(out.Denials, rec)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
