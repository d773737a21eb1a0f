package main

// enforcerd ctl: the operator's client of a running daemon's API (package
// daemon/api, its Client and wire types). This file holds the command
// tree, the flags every ctl command shares, and how the daemon's answers
// and failures become output and exit codes; ctl_help.go the help texts,
// ctl_print.go the readable tables, ctl_register.go the registration and
// ctl_denials.go the denial records.

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
var ctlSubcommands = []string{"status", "list", "get", "register", "unregister", "narrow", "surface", "denials"}

func newCtlCmd(s streams) *cobra.Command {
	o := &ctlOptions{}
	c := newCommand(s, commandSpec{
		name:    "ctl",
		summary: "query and change a running daemon: containers, ceilings, denials",
		help:    ctlHelp,
		args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q (want %s)", args[0], strings.Join(ctlSubcommands, ", "))
			}
			return nil
		},
		run: func(*cobra.Command, []string) error {
			return usageErrorf("missing command (want %s)", strings.Join(ctlSubcommands, ", "))
		},
	})
	fs := c.PersistentFlags()
	socketFlag(fs, &o.socket)
	jsonFlag(fs, &o.asJSON)
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound of each request to the daemon")
	c.PersistentPreRunE = func(*cobra.Command, []string) error {
		if o.timeout <= 0 {
			return usageErrorf("--timeout %s: want a positive duration", o.timeout)
		}
		return nil
	}
	c.AddCommand(newCtlStatusCmd(s, o), newCtlListCmd(s, o), newCtlGetCmd(s, o), newCtlRegisterCmd(s, o),
		newCtlUnregisterCmd(s, o), newCtlNarrowCmd(s, o), newCtlSurfaceCmd(s, o), newCtlDenialsCmd(s, o))
	return c
}

// ctlFail turns a failed request into the command's output and exit
// status: a daemon that cannot be reached and a refusal of the daemon
// (its error code and message) are exit 1, printed as "enforcerd ctl
// CMD: ..." on stderr.
func ctlFail(s streams, c *cobra.Command, o *ctlOptions, err error) error {
	var ae *api.Error
	switch {
	case errors.Is(err, api.ErrUnreachable):
		cause := err
		var oe *net.OpError
		if errors.As(err, &oe) {
			cause = oe.Err
		}
		hint := "is the daemon running? (systemctl status enforcerd)"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			cause = fmt.Errorf("no answer within --timeout %s", o.timeout)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			hint = "the API socket is root-only: run enforcerd ctl as root"
		}
		fmt.Fprintf(s.err, "%s: cannot reach the enforcerd daemon at %s (%v): %s\n", c.CommandPath(), o.socket, cause, hint)
	case errors.As(err, &ae):
		code := ae.Code
		if code == "" {
			code = "error"
		}
		fmt.Fprintf(s.err, "%s: the daemon refused: %s: %s (HTTP %d)\n", c.CommandPath(), code, ae.Message, ae.Status)
	default:
		fmt.Fprintf(s.err, "%s: %v\n", c.CommandPath(), err)
	}
	return exitCode(exitFailure)
}

// printJSON prints v indented, as the API's JSON.
func printJSON(s streams, v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneID checks the one positional argument, a container id.
func oneID(_ *cobra.Command, args []string) error {
	switch len(args) {
	case 1:
		if args[0] == "" {
			return usageErrorf("empty container ID")
		}
		return nil
	case 0:
		return usageErrorf("missing container ID")
	}
	return usageErrorf("unexpected argument %q (one container ID)", args[1])
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
func ctlCommand(s streams, o *ctlOptions, spec commandSpec, run func(c *cobra.Command, args []string) error) *cobra.Command {
	spec.run = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		var code exitCode
		var ue usageError
		if err == nil || errors.As(err, &code) || errors.As(err, &ue) {
			return err
		}
		return ctlFail(s, c, o, err)
	}
	return newCommand(s, spec)
}

func newCtlStatusCmd(s streams, o *ctlOptions) *cobra.Command {
	return ctlCommand(s, o, commandSpec{name: "status", summary: "the daemon's status: hooks, coverage, settings", help: ctlStatusHelp},
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
			return printStatus(s.out, st)
		})
}

func newCtlListCmd(s streams, o *ctlOptions) *cobra.Command {
	return ctlCommand(s, o, commandSpec{name: "list", summary: "the registered containers", help: ctlListHelp},
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
			return printList(s.out, list)
		})
}

func newCtlGetCmd(s streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, commandSpec{name: "get", summary: "one registered container", help: ctlGetHelp, args: oneID},
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

func newCtlUnregisterCmd(s streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, commandSpec{name: "unregister", summary: "remove a container's ceiling", help: ctlUnregisterHelp, args: oneID},
		func(_ *cobra.Command, args []string) error {
			ctx, cancel := o.ctx()
			defer cancel()
			if err := o.client().Unregister(ctx, args[0]); err != nil {
				return err
			}
			if o.asJSON {
				return printJSON(s, api.UnregisterBody{Unregistered: args[0]})
			}
			fmt.Fprintf(s.out, "unregistered %s\n", args[0])
			return nil
		})
	c.ValidArgsFunction = completeIDs(o)
	return c
}

func newCtlNarrowCmd(s streams, o *ctlOptions) *cobra.Command {
	var ceiling string
	c := ctlCommand(s, o, commandSpec{name: "narrow", summary: "narrow a container's ceiling", help: ctlNarrowHelp, args: oneID},
		func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("ceiling") {
				return usageErrorf("missing --ceiling (the ceiling text to narrow to)")
			}
			if _, err := policy.ParseCeiling(ceiling, policy.DefaultSession()); err != nil {
				return usageErrorf("--ceiling: %w", err)
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
				fmt.Fprintf(s.err, "enforcerd ctl narrow: %s: ceiling unchanged (%s is nowhere narrower than the current ceiling; narrow never widens)\n", args[0], ceiling)
			}
			return printContainer(s, o, ct)
		})
	c.Flags().StringVar(&ceiling, "ceiling", "", "ceiling text to narrow to (KEY=VALUE,...)")
	c.ValidArgsFunction = completeIDs(o)
	return c
}

func newCtlSurfaceCmd(s streams, o *ctlOptions) *cobra.Command {
	c := ctlCommand(s, o, commandSpec{name: "surface", summary: "a registered container's tool surface", help: ctlSurfaceHelp, args: oneID},
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
			printSurface(s.out, sf)
			return nil
		})
	c.ValidArgsFunction = completeIDs(o)
	return c
}

// printContainer prints one container (get, register, narrow).
func printContainer(s streams, o *ctlOptions, ct api.Container) error {
	if o.asJSON {
		return printJSON(s, ct)
	}
	return printContainerText(s.out, ct)
}

// stdinOrFile reads path, "-" for standard input, at most limit bytes.
func stdinOrFile(s streams, path string, limit int64) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = readLimited(s.in, limit)
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
