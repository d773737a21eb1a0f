package cli

// The hook's use of the daemon's API client and wire types (daemon/api,
// daemon/metrics): it registers and unregisters containers. run's is
// its daemonSession (cmd/enforcerd/run/daemon.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/progcheck"
)

// defaultSocket is the daemon's API socket (--socket of run and hook).
const defaultSocket = api.DefaultSocket

// hookClient is the hook's connection to the daemon.
type hookClient struct{ C *api.Client }

// newHookClient: the hook waits for a restarting daemon within its
// timeout (api.Client.WaitForDaemon) rather than refusing the container.
func NewHookClient(socket string, timeout time.Duration) hookClient {
	c := api.NewClient(socket, timeout)
	c.WaitForDaemon = true
	return hookClient{c}
}

// register asks the daemon to register the OCI container st, whose cgroup
// is group, with the ceiling of its annotations, pending until the first
// exec (the state's pid is the runtime's init), and prints what was
// registered on w. epErr is why the hook could not name the entrypoint
// (ep nil), added to the daemon's refusal when it needed one. spec is
// what the container's runtime spec enforces by itself (hookSpecLayer).
func (h hookClient) Register(ctx context.Context, w io.Writer, st specs.State, req oci.Request, group string, ep *progcheck.Program, epErr error, spec *coverage.SpecLayer) error {
	c, err := h.C.Register(ctx, api.RegisterRequest{
		ID: st.ID, Cgroup: group, PID: st.Pid, Role: req.Role, Ceiling: req.Ceiling,
		Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups, ProxyAllow: req.ProxyAllow,
		Activate: api.ActivateExec, InitPID: st.Pid,
		Entrypoint: api.EntrypointFrom(ep), AllowConnect: req.AllowConnectList(), WriteRoots: req.WriteRoots,
		ExecAllow:     req.ExecAllow,
		ContainerSpec: spec,
		AllowDevices:  req.AllowDevices,
		OwnTerminals:  api.OwnTerminalsInit,
	})
	if err != nil {
		var ae *api.Error
		if epErr != nil && errors.As(err, &ae) && ae.Code == metrics.ResultEntrypointRequired {
			err = fmt.Errorf("%w (the hook could not name the entrypoint: %v)", err, epErr)
		}
		return err
	}
	fmt.Fprintf(w, "enforcerd hook createRuntime: container %s registered: cgroup %s (id %d), kernel %s, audit_only=%t, fingerprint %s, activation %s\n",
		c.ID, c.Cgroup, c.CgroupID, c.Kernel, c.AuditOnly, c.Fingerprint, c.Activation)
	for _, g := range c.Unenforced {
		fmt.Fprintf(w, "enforcerd hook createRuntime: container %s: partial coverage (the daemon allows it): NOT enforced: %s\n", c.ID, g)
	}
	if c.ActivationReason != "" {
		fmt.Fprintf(w, "enforcerd hook createRuntime: container %s: in force at once: %s\n", c.ID, c.ActivationReason)
	}
	return nil
}

// unregister asks the daemon to unregister container id. known is false
// (and err nil) when the daemon does not know it.
func (h hookClient) Unregister(ctx context.Context, id string) (known bool, err error) {
	err = h.C.Unregister(ctx, id)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// hookExit maps a daemon error to the hook's exit status: 125 when the
// ceiling cannot be enforced (HTTP 422, including partial coverage the
// daemon does not allow) or the daemon is unreachable; 1 for every other
// refusal or failure (a conflict, an unknown parent, a bad request, a 5xx).
// Exit 2 is only for the hook's own malformed input, decided before the
// daemon is asked.
func HookExit(err error) int {
	var ae *api.Error
	switch {
	case errors.Is(err, api.ErrUnreachable):
		return ExitCannotEnforce
	case errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity:
		return ExitCannotEnforce
	}
	return ExitFailure
}
