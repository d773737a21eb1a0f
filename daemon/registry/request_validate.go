package registry

import "github.com/enforcerd/enforcerd/oci"

// The first steps of Request.validate (request.go).

// validateIDs checks the container's and the parent's ids (oci.ValidID;
// a container is not its own parent) and the lengths of the role, the
// ceiling text and the tool groups (ErrBadRequest).
func (req Request) validateIDs() error {
	if !oci.ValidID(req.ID) {
		return badf("container id %q is empty or not [A-Za-z0-9][A-Za-z0-9_.+:-]{0,255}", req.ID)
	}
	if req.Parent != "" && !oci.ValidID(req.Parent) {
		return badf("parent id %q is not a container id", req.Parent)
	}
	if req.Parent == req.ID {
		return badf("container %s cannot be its own parent", req.ID)
	}
	if len(req.Role) > 256 || len(req.ToolGroups) > 1024 || len(req.Ceiling) > 1024 {
		return badf("role, ceiling or tool_groups too long")
	}
	return nil
}

// validateTarget checks what the ceiling goes on and when: a cgroup or a
// pid (not negative), activate now or exec, and init_pid only with
// activate=exec (ErrBadRequest).
func (req Request) validateTarget() error {
	if req.Cgroup == "" && req.PID <= 0 {
		return badf("container %s: give cgroup or pid", req.ID)
	}
	if req.PID < 0 {
		return badf("container %s: negative pid", req.ID)
	}
	switch req.Activate {
	case "", ActivateNow, ActivateExec:
	default:
		return badf("activate %q: want now|exec", req.Activate)
	}
	if req.InitPID < 0 || req.InitPID > 0 && req.Activate != ActivateExec {
		return badf("container %s: init_pid %d: want a pid, and only with activate=exec", req.ID, req.InitPID)
	}
	return nil
}
