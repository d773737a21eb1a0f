// Package ctl is "enforcerd ctl": the operator's client of a running
// daemon's API. It imports the library packages and cmd/enforcerd/cli, no
// other command's package but surface (whose printer ctl surface shares).
package ctl

// enforcerd ctl: the operator's client of a running daemon's API (package
// daemon/api, its Client and wire types). This file holds the command
// tree, the flags every ctl command shares, and how the daemon's answers
// and failures become output and exit codes; help.go the help texts,
// print.go the readable tables, register.go the registration and
// denials.go the denial records.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/surface"
)

// ctlOptions are the flags every ctl command has (persistent flags of
// ctl, given before or after the subcommand).
type ctlOptions struct {
	socket  string
	asJSON  bool
	timeout time.Duration
}

// client is the API client of the daemon at --socket; each request
// (except following denials) is bounded by --timeout.
func (o *ctlOptions) client() *api.Client { return api.NewClient(o.socket, o.timeout) }

// ctx bounds one request by --timeout.
func (o *ctlOptions) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), o.timeout)
}

// ctlSubcommands are the subcommands of ctl, in the order of its help.
var ctlSubcommands = []string{"status", "ready", "list", "get", "register", "unregister", "narrow", "surface", "denials"}

func NewCommand(s cli.Streams) *cobra.Command {
	o := &ctlOptions{}
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "ctl",
		Summary: "query and change a running daemon: containers, ceilings, denials",
		Help:    ctlHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.UsageErrorf("unknown command %q (want %s)", args[0], strings.Join(ctlSubcommands, ", "))
			}
			return nil
		},
		Run: func(*cobra.Command, []string) error {
			return cli.UsageErrorf("missing command (want %s)", strings.Join(ctlSubcommands, ", "))
		},
	})
	fs := c.PersistentFlags()
	cli.SocketFlag(fs, &o.socket)
	cli.JsonFlag(fs, &o.asJSON)
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound of each request to the daemon")
	c.PersistentPreRunE = func(*cobra.Command, []string) error {
		if o.timeout <= 0 {
			return cli.UsageErrorf("--timeout %s: want a positive duration", o.timeout)
		}
		return nil
	}
	c.AddCommand(newCtlStatusCmd(s, o), newCtlReadyCmd(s, o), newCtlListCmd(s, o), newCtlGetCmd(s, o), newCtlRegisterCmd(s, o),
		newCtlUnregisterCmd(s, o), newCtlNarrowCmd(s, o), newCtlSurfaceCmd(s, o), newCtlDenialsCmd(s, o))
	return c
}

// ctlFail turns a failed request into the command's output and exit
// status: a daemon that cannot be reached and a refusal of the daemon
// (its error code and message) are exit 1, printed as "enforcerd ctl
// CMD: ..." on stderr.
func ctlFail(s cli.Streams, c *cobra.Command, o *ctlOptions, err error) error {
	var ae *api.Error
	switch {
	case errors.Is(err, api.ErrUnreachable):
		cause := err
		var oe *net.OpError
		if errors.As(err, &oe) {
			cause = oe.Err
		}
		hint := "is the daemon running? (systemctl status enforcerd.socket enforcerd.service)"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			cause = fmt.Errorf("no answer within --timeout %s", o.timeout)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			hint = "the API socket is root-only: run enforcerd ctl as root"
		}
		fmt.Fprintf(s.Err, "%s: cannot reach the enforcerd daemon at %s (%v): %s\n", c.CommandPath(), o.socket, cause, hint)
	case errors.As(err, &ae):
		code := ae.Code
		if code == "" {
			code = "error"
		}
		fmt.Fprintf(s.Err, "%s: the daemon refused: %s: %s (HTTP %d)\n", c.CommandPath(), code, ae.Message, ae.Status)
	default:
		fmt.Fprintf(s.Err, "%s: %v\n", c.CommandPath(), err)
	}
	return cli.ExitCode(cli.ExitFailure)
}

// printJSON prints v indented, as the API's JSON.
func printJSON(s cli.Streams, v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneID checks the one positional argument, a container id.
func oneID(_ *cobra.Command, args []string) error {
	switch len(args) {
	case 1:
		if args[0] == "" {
			return cli.UsageErrorf("empty container ID")
		}
		return nil
	case 0:
		return cli.UsageErrorf("missing container ID")
	}
	return cli.UsageErrorf("unexpected argument %q (one container ID)", args[1])
}

// completeIDs offers the ids of the containers registered with the daemon
// at --socket as the argument (completion asks the daemon, for one second
// at most; without an answer it offers nothing).
func completeIDs(o *ctlOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		list, err := api.NewClient(o.socket, time.Second).List(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []cobra.Completion
		for _, c := range list {
			if strings.HasPrefix(c.ID, prefix) {
				ids = append(ids, cobra.CompletionWithDesc(c.ID, c.State))
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// ctlCommand builds a ctl subcommand: run gets the options and the
// arguments and returns the API's error, which ctlFail reports.
func ctlCommand(s cli.Streams, o *ctlOptions, spec cli.CommandSpec, run func(c *cobra.Command, args []string) error) *cobra.Command {
	spec.Run = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		var code cli.ExitCode
		var ue cli.UsageError
		if err == nil || errors.As(err, &code) || errors.As(err, &ue) {
			return err
		}
		return ctlFail(s, c, o, err)
	}
	return cli.NewCommand(s, spec)
}

func newCtlStatusCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	var verbose bool
	c := ctlCommand(s, o, cli.CommandSpec{Name: "status", Summary: "the daemon's status: hooks, coverage, settings", Help: ctlStatusHelp},
		func(*cobra.Command, []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			st, err := o.client().Status(ctx)
			if err != nil {
				return err
			}
			if o.asJSON {
				return printJSON(s, st)
			}
			return printStatus(s.Out, st, verbose)
		})
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "every program's attachment, one row each")
	return c
}

// newCtlReadyCmd is "ctl ready": exit 0 when the daemon is ready, 1 with
// the parts missing named (or the daemon unreachable).
func newCtlReadyCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	return ctlCommand(s, o, cli.CommandSpec{Name: "ready", Summary: "whether the daemon is ready: pins adopted, state reconciled, API served", Help: ctlReadyHelp},
		func(c *cobra.Command, _ []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			r, err := o.client().Ready(ctx)
			if err != nil {
				return err
			}
			if o.asJSON {
				if err := printJSON(s, r); err != nil {
					return err
				}
			} else if r.Ready {
				fmt.Fprintln(s.Out, "ready")
			} else {
				fmt.Fprintf(s.Out, "not ready: %s\n", strings.Join(r.Missing, "; "))
			}
			if !r.Ready {
				return cli.ExitCode(cli.ExitFailure)
			}
			return nil
		})
}

func newCtlListCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	return ctlCommand(s, o, cli.CommandSpec{Name: "list", Summary: "the registered containers", Help: ctlListHelp},
		func(*cobra.Command, []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			list, err := o.client().List(ctx)
			if err != nil {
				return err
			}
			if o.asJSON {
				if list == nil {
					list = []api.Container{}
				}
				return printJSON(s, api.ListBody{Containers: list})
			}
			return printList(s.Out, list)
		})
}

func newCtlGetCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, cli.CommandSpec{Name: "get", Summary: "one registered container", Help: ctlGetHelp, Args: oneID},
		func(_ *cobra.Command, args []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			ct, err := o.client().Get(ctx, args[0])
			if err != nil {
				return err
			}
			return printContainer(s, o, ct)
		})
	c.ValidArgsFunction = completeIDs(o)
	return c
}

func newCtlUnregisterCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, cli.CommandSpec{Name: "unregister", Summary: "remove a container's ceiling", Help: ctlUnregisterHelp, Args: oneID},
		func(_ *cobra.Command, args []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			if err := o.client().Unregister(ctx, args[0]); err != nil {
				return err
			}
			if o.asJSON {
				return printJSON(s, api.UnregisterBody{Unregistered: args[0]})
			}
			fmt.Fprintf(s.Out, "unregistered %s\n", args[0])
			return nil
		})
	c.ValidArgsFunction = completeIDs(o)
	return c
}

func newCtlNarrowCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	var ceiling string
	c := ctlCommand(s, o, cli.CommandSpec{Name: "narrow", Summary: "narrow a container's ceiling", Help: ctlNarrowHelp, Args: oneID},
		func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("ceiling") {
				return cli.UsageErrorf("missing --ceiling (the ceiling text to narrow to)")
			}
			if _, err := policy.ParseCeiling(ceiling, policy.DefaultSession()); err != nil {
				return cli.UsageErrorf("--ceiling: %w", err)
			}
			ctx, cancel := o.ctx()
			defer cancel()
			before, err := o.client().Get(ctx, args[0])
			if err != nil {
				return err
			}
			ct, err := o.client().Narrow(ctx, args[0], ceiling)
			if err != nil {
				return err
			}
			if reflect.DeepEqual(before.Ceiling, ct.Ceiling) {
				// Not an error (the meet is well defined), but a request
				// that changed nothing is worth a word: often it asked to
				// widen.
				fmt.Fprintf(s.Err, "enforcerd ctl narrow: %s: ceiling unchanged (%s is nowhere narrower than the current ceiling; narrow never widens)\n", args[0], ceiling)
			}
			return printContainer(s, o, ct)
		})
	c.Flags().StringVar(&ceiling, "ceiling", "", "ceiling text to narrow to (KEY=VALUE,...)")
	c.ValidArgsFunction = completeIDs(o)
	return c
}

func newCtlSurfaceCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, cli.CommandSpec{Name: "surface", Summary: "a registered container's tool surface", Help: ctlSurfaceHelp, Args: oneID},
		func(_ *cobra.Command, args []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			sf, err := o.client().Surface(ctx, args[0])
			if err != nil {
				return err
			}
			if o.asJSON {
				return printJSON(s, sf)
			}
			surface.PrintSurface(s.Out, sf)
			return nil
		})
	c.ValidArgsFunction = completeIDs(o)
	return c
}

// printContainer prints one container (get, register, narrow).
func printContainer(s cli.Streams, o *ctlOptions, ct api.Container) error {
	if o.asJSON {
		return printJSON(s, ct)
	}
	return printContainerText(s.Out, ct)
}

// stdinOrFile reads path, "-" for standard input, at most limit bytes.
func stdinOrFile(s cli.Streams, path string, limit int64) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = readLimited(s.In, limit)
	} else {
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
		b, err = readLimited(f, limit)
	}
	return b, err
}

// givenFlags names the flags of fs given on the command line ("--name"),
// in name order.
func givenFlags(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) { out = append(out, "--"+f.Name) })
	return out
}
