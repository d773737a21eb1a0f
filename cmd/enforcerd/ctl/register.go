package ctl

// enforcerd ctl register: a registration request from flags (one per field
// of api.RegisterRequest) or verbatim from a JSON file.

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// maxRequestFile bounds --file (the daemon refuses bodies over 64 KiB).
const maxRequestFile = 1 << 20

// registerFlags are register's flags, one per api.RegisterRequest field.
type registerFlags struct {
	file                              string
	req                               api.RegisterRequest
	activate                          string
	entrypoint, epRoot, epPath, epCwd string
	proxyAllow                        string
}

// request checks the flags and builds the request. With --file no other
// request flag may be given; without it --id is required.
func (f *registerFlags) request(c *cobra.Command) (api.RegisterRequest, error) {
	fs := c.Flags()
	req := f.req
	if fs.Changed("role") {
		if _, err := policy.LookupRole(req.Role); err != nil {
			return req, cli.UsageErrorf("--role: %w", err)
		}
	}
	if fs.Changed("ceiling") {
		if _, err := policy.ParseCeiling(req.Ceiling, policy.DefaultSession()); err != nil {
			return req, cli.UsageErrorf("--ceiling: %w", err)
		}
	}
	if fs.Changed("proxy-allow") {
		req.ProxyAllow = &f.proxyAllow
	}
	if req.ID == "" {
		return req, cli.UsageErrorf("missing --id (or --file with the request)")
	}
	for _, p := range req.WriteRoots {
		if !strings.HasPrefix(p, "/") {
			return req, cli.UsageErrorf("--write-root %q: want an absolute path (resolved in the container's root: --entrypoint-root, else the --pid's root, else /)", p)
		}
	}
	for _, p := range req.ExecAllow {
		if !path.IsAbs(p) {
			return req, cli.UsageErrorf("--exec-allow %q: want an absolute path (resolved in the container's root: --entrypoint-root, else the --pid's root, else /)", p)
		}
	}
	if _, err := devallow.ParseList(req.AllowDevices); err != nil {
		return req, cli.UsageErrorf("--allow-device: %w", err)
	}
	switch req.OwnTerminals {
	case "", api.OwnTerminalsNone, api.OwnTerminalsClient, api.OwnTerminalsInit:
	default:
		return req, cli.UsageErrorf("--own-terminals %q: want client, init or none", req.OwnTerminals)
	}
	if req.PID < 0 || req.InitPID < 0 {
		return req, cli.UsageErrorf("--pid and --init-pid are process ids (> 0)")
	}
	switch f.activate {
	case "", string(api.ActivateNow), string(api.ActivateExec):
		req.Activate = api.Activation(f.activate)
	default:
		return req, cli.UsageErrorf("--activate %q: want now or exec", f.activate)
	}
	if f.entrypoint == "" {
		for _, n := range []string{"entrypoint-root", "entrypoint-env-path", "entrypoint-cwd"} {
			if fs.Changed(n) {
				return req, cli.UsageErrorf("--%s needs --entrypoint", n)
			}
		}
	} else {
		if f.epRoot == "" {
			return req, cli.UsageErrorf("--entrypoint needs --entrypoint-root (the host path of the directory the container sees as /)")
		}
		req.Entrypoint = &api.Entrypoint{Path: f.entrypoint, Root: f.epRoot, EnvPath: f.epPath, Cwd: f.epCwd}
	}
	return req, nil
}

func newCtlRegisterCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	f := &registerFlags{}
	c := ctlCommand(s, o, cli.CommandSpec{Name: "register", Summary: "register a container with a ceiling", Help: ctlRegisterHelp},
		func(c *cobra.Command, _ []string) error {
			var ct api.Container
			var err error
			if c.Flags().Changed("file") {
				body, rerr := f.body(s, c)
				if rerr != nil {
					return rerr
				}
				ctx, cancel := o.ctx()
				defer cancel()
				ct, err = o.client().RegisterJSON(ctx, body)
			} else {
				req, rerr := f.request(c)
				if rerr != nil {
					return rerr
				}
				ctx, cancel := o.ctx()
				defer cancel()
				ct, err = o.client().Register(ctx, req)
			}
			if err != nil {
				return err
			}
			return printContainer(s, o, ct)
		})
	fs := c.Flags()
	fs.StringVar(&f.file, "file", "", "the request as JSON, from FILE or - (standard input)")
	fs.StringVar(&f.req.ID, "id", "", "container id")
	fs.StringVar(&f.req.Cgroup, "cgroup", "", "cgroup2 group path of the container (/machine.slice/x)")
	fs.IntVar(&f.req.PID, "pid", 0, "a process of the container (the daemon reads its cgroup)")
	cli.RoleFlag(fs, &f.req.Role)
	fs.StringVar(&f.req.Ceiling, "ceiling", "", "ceiling text (KEY=VALUE,...)")
	fs.StringVar(&f.req.Parent, "parent", "", "id of the registered parent container")
	fs.BoolVar(&f.req.AuditOnly, "audit-only", false, "record what the ceiling would deny, deny nothing")
	fs.StringVar(&f.req.ToolGroups, "tool-groups", "", "comma-separated tool groups")
	fs.StringVar(&f.proxyAllow, "proxy-allow", "", "egress proxy domain patterns for this container, or none")
	fs.StringArrayVar(&f.req.AllowConnect, "allow-connect", nil, "with network=false: an endpoint still reachable (repeatable)")
	fs.StringArrayVar(&f.req.WriteRoots, "write-root", nil, "with write=false: an absolute path of a directory beneath which writes stay allowed (repeatable, at most 16)")
	fs.StringArrayVar(&f.req.AllowDevices, "allow-device", nil, "a device node the container may use: c MAJOR:MINOR, b MAJOR:MINOR or an absolute path (repeatable, at most 16)")
	fs.StringVar(&f.req.OwnTerminals, "own-terminals", "", "whose stdio and controlling terminal are the container's own: client (this process), init (--init-pid) or none")
	fs.BoolVar(&f.req.DenyConsoleEgress, "deny-console-egress", false, "under network=false, refuse an own terminal that leaves the machine (console, serial line)")
	fs.StringArrayVar(&f.req.ExecAllow, "exec-allow", nil, "with shell=none: an absolute path of a file the container may execute (repeatable, at most 16)")
	fs.StringVar(&f.activate, "activate", "", "now (default) or exec: pending until the first exec")
	fs.IntVar(&f.req.InitPID, "init-pid", 0, "with --activate exec: the runtime's init process")
	fs.StringVar(&f.entrypoint, "entrypoint", "", "the first exec's program (process.args[0])")
	fs.StringVar(&f.epRoot, "entrypoint-root", "", "host path of the directory the container sees as /")
	fs.StringVar(&f.epPath, "entrypoint-env-path", "", "the container's PATH, for a bare --entrypoint name")
	fs.StringVar(&f.epCwd, "entrypoint-cwd", "", "the container's working directory")
	return c
}

// body reads the request of --file, sent as it is: the daemon's strict
// decoding judges every key. Other request flags are refused with it.
func (f *registerFlags) body(s cli.Streams, c *cobra.Command) ([]byte, error) {
	var others []string
	for _, n := range givenFlags(c.Flags()) {
		switch n {
		case "--file", "--socket", "--json", "--timeout":
		default:
			others = append(others, n)
		}
	}
	if len(others) > 0 {
		return nil, cli.UsageErrorf("--file takes the whole request: %s cannot be given with it", strings.Join(others, ", "))
	}
	if f.file == "" {
		return nil, cli.UsageErrorf("--file: empty path (a file, or - for standard input)")
	}
	b, err := stdinOrFile(s, f.file, maxRequestFile)
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", f.file, err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, cli.UsageErrorf("--file %s: empty (want the request as one JSON object)", f.file)
	}
	if err := validJSON(b); err != nil {
		return nil, cli.UsageErrorf("--file %s: %w", f.file, err)
	}
	return b, nil
}

// readLimited reads r to its end; more than limit bytes is an error.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// validJSON checks that b is one JSON value (the daemon wants an object
// and says so).
func validJSON(b []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}
