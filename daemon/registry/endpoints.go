package registry

import (
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
)

// allowConnect is the list a new container c (its effective kernel
// ceiling decided) is registered with: req.AllowConnect parsed, unix
// paths resolved (inside the entrypoint's root when the request names
// one, else on the daemon's file system), met with the parent's list when
// the parent's and with every registered cgroup's above c.Cgroup that
// denies network (one with network=false and no list leaves nothing): the
// meet the kernel takes over every registered ancestor cgroup
// (bpf/endpoints.h), so the answer and `list` show what the container can
// reach. Errors (ErrBadRequest, naming allow_connect): a list while the
// effective ceiling allows network (it would mislead), a path that is
// missing or not a socket; an ancestor cgroup that cannot be read (fail
// closed).
func (r *Registry) allowConnect(req Request, c state.Container) ([]endpoint.Endpoint, error) {
	if len(req.AllowConnect) == 0 {
		return nil, nil
	}
	if c.Kernel.Network {
		return nil, badf("container %s: allow_connect needs network=false (the effective ceiling allows network: the list would mislead)", req.ID)
	}
	eps, err := endpoint.ParseList(req.AllowConnect)
	if err != nil {
		return nil, badf("container %s: allow_connect: %v", req.ID, err)
	}
	root := "/"
	if req.Entrypoint != nil {
		root = req.Entrypoint.Root
	} else if req.Activate == ActivateExec {
		for _, ep := range eps {
			if ep.Kind == endpoint.Unix {
				// A container's paths are inside its root, never the
				// daemon's: without the root, nothing to resolve in.
				return nil, badf("container %s: allow_connect %s: a unix endpoint of a container registered at exec needs entrypoint.root to be resolved in", req.ID, ep)
			}
		}
	}
	if eps, err = endpoint.Resolve(eps, root); err != nil {
		return nil, badf("container %s: allow_connect: %v", req.ID, err)
	}
	if req.Parent != "" {
		if p, ok := r.byID[req.Parent]; ok && !p.Kernel.Network {
			eps = endpoint.Intersect(eps, p.AllowConnect)
		}
	}
	if c.Cgroup == "" {
		return eps, nil
	}
	err = r.eachOuter(c.Cgroup, func(_ string, a *state.Container, en *entry.Entry) {
		switch {
		case a != nil && !a.Kernel.Network:
			eps = endpoint.Intersect(eps, a.AllowConnect)
		case en != nil && !en.Ceiling.Network:
			eps = endpoint.Intersect(eps, en.AllowConnect)
		}
	})
	if err != nil {
		return nil, err
	}
	return eps, nil
}
