package registry

import (
	"fmt"
	"path"
	"strings"

	"github.com/enforcerd/enforcerd/egress"
)

// proxyAllow canonicalises a validated proxy_allow value (nil stays nil).
func proxyAllow(s *string) *[]string {
	if s == nil {
		return nil
	}
	l, err := egress.ParseAllowList(*s)
	if err != nil { // validate refused it already
		l = []string{}
	}
	return &l
}

// ProxyAllowChain places a cgroup (group path) for the egress proxy: the
// nearest registered container whose cgroup is group or encloses it (""
// for none), and the proxy_allow lists of every registered container that
// encloses group, by cgroup or, from those, by parent id (containers
// without a list add none). The proxy allows a name only if every list
// allows it, so a container narrows what any enclosing container allows
// and never widens it. Errors: a cgroup on the way up cannot be opened
// (the proxy then refuses the client: fail closed).
func (r *Registry) ProxyAllowChain(group string) (container string, lists [][]string, err error) {
	group = path.Clean(group)
	if !strings.HasPrefix(group, "/") {
		return "", nil, fmt.Errorf("cgroup %q is not an absolute group path", group)
	}
	seen := map[string]bool{}
	add := func(id string) {
		for id != "" && !seen[id] {
			seen[id] = true
			c, err := r.Get(id)
			if err != nil {
				return
			}
			if c.ProxyAllow != nil {
				lists = append(lists, *c.ProxyAllow)
			}
			id = c.Parent
		}
	}
	for g := group; ; g = path.Dir(g) {
		cg, err := r.o.Cgroups.Open(g)
		if err != nil {
			return "", nil, fmt.Errorf("cgroup %s: %w", g, err)
		}
		if c, ok := r.ByCgroup(cg.ID); ok {
			if container == "" {
				container = c.ID
			}
			add(c.ID)
		}
		if g == "/" {
			return container, lists, nil
		}
	}
}
