package registry

import (
	"fmt"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Check is a dry run of Register for a container whose cgroup does not
// exist yet (the NRI plugin's CreateContainer): it checks what Register
// checks before it looks at a cgroup, and changes nothing. It returns the
// kernel ceiling the request resolves to on its own (role, ceiling text,
// the parent's effective ceiling), before the meet with the registered
// cgroups above the container's, which is known only at Register (that
// meet only narrows).
//
// Errors, as Register's: ErrBadRequest (the id, a parent that is not a
// container id, the lengths, the role, the ceiling text, proxy_allow,
// allow_connect and its syntax, allow_connect while the ceiling allows
// network, write_roots' paths, allow_devices' syntax), ErrNotFound (an unregistered parent),
// ErrConflict (the id is registered), and ErrCannotEnforce or
// ErrPartialCoverage from the host's coverage of that ceiling
// (coverage.Coverage.Err with the request's audit-only and the
// registry's AllowPartial). Not checked here: the cgroup, the init
// process, the entrypoint under shell=none, unix endpoints', write
// roots' and device nodes' files (they exist only once the container
// does).
func (r *Registry) Check(req Request) (policy.KernelCeiling, error) {
	var none policy.KernelCeiling
	if !oci.ValidID(req.ID) {
		return none, badf("container id %q is empty or not [A-Za-z0-9][A-Za-z0-9_.+:-]{0,255}", req.ID)
	}
	if req.Parent != "" && !oci.ValidID(req.Parent) {
		return none, badf("parent id %q is not a container id", req.Parent)
	}
	if len(req.Role) > 256 || len(req.ToolGroups) > 1024 || len(req.Ceiling) > 1024 {
		return none, badf("role, ceiling or tool_groups too long")
	}
	if req.ProxyAllow != nil {
		// Request.validate's check, without the cgroup it requires.
		probe := Request{ID: req.ID, PID: 1, ProxyAllow: req.ProxyAllow}
		if err := probe.validate(); err != nil {
			return none, err
		}
	}
	eps, err := endpoint.ParseList(req.AllowConnect)
	if err != nil {
		return none, badf("container %s: allow_connect: %v", req.ID, err)
	}
	if _, err := devallow.ParseList(req.AllowDevices); err != nil {
		return none, badf("container %s: allow_devices: %v", req.ID, err)
	}
	if len(req.WriteRoots) > 0 {
		if _, err := policy.CheckWriteRootPaths(req.WriteRoots); err != nil {
			return none, badf("container %s: write_roots: %v", req.ID, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[req.ID]; ok {
		return none, fmt.Errorf("%w: container %s is already registered", ErrConflict, req.ID)
	}
	base := policy.DefaultSession()
	if req.Parent != "" {
		p, ok := r.byID[req.Parent]
		if !ok {
			return none, fmt.Errorf("%w: parent %s of container %s", ErrNotFound, req.Parent, req.ID)
		}
		base = p.Ceiling
	}
	_, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, base)
	if err != nil {
		return none, fmt.Errorf("container %s: %w", req.ID, err)
	}
	if len(eps) > 0 && surf.Kernel.Network {
		return none, badf("container %s: allow_connect needs network=false (the effective ceiling allows network: the list would mislead)", req.ID)
	}
	cov := r.o.Enforcer.CoverageOf(entry.Entry{Ceiling: surf.Kernel, AllowConnect: eps, Spec: req.Spec})
	if err := cov.Err(req.AuditOnly, r.o.AllowPartial); err != nil {
		return none, fmt.Errorf("container %s: %w", req.ID, err)
	}
	return surf.Kernel, nil
}
