package ctl

// enforcerd ctl denials: the denial records the daemon kept, or the
// stream of new ones (--follow) until interrupted.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// errStreamEnded: the daemon closed the denial stream (it stopped or
// restarted) while ctl denials --follow was reading it.
var errStreamEnded = errors.New("the daemon closed the denial stream (stopped or restarted?)")

// interruptContext is the context of --follow: done on SIGINT or SIGTERM
// (tests substitute it).
var interruptContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newCtlDenialsCmd(s cli.Streams, o *ctlOptions) *cobra.Command {
	var follow bool
	var f api.DenialFilter
	c := ctlCommand(s, o, cli.CommandSpec{Name: "denials", Summary: "the denial records: the recent ones, or follow new ones", Help: ctlDenialsHelp},
		func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("container") && c.Flags().Changed("cgroup-id") {
				return cli.UsageErrorf("--container and --cgroup-id cannot be given together")
			}
			if c.Flags().Changed("container") && f.Container == "" {
				return cli.UsageErrorf("--container: empty container ID")
			}
			if c.Flags().Changed("cgroup-id") && f.CgroupID == 0 {
				return cli.UsageErrorf("--cgroup-id: 0 is no cgroup id")
			}
			if follow {
				return followDenials(s, o, f)
			}
			ctx, cancel := o.ctx()
			defer cancel()
			recs, err := o.client().RecentDenials(ctx, f)
			if err != nil {
				return err
			}
			if o.asJSON {
				if recs == nil {
					recs = []audit.Record{}
				}
				return printJSON(s, api.DenialsBody{Denials: recs})
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, denialHeader)
			for _, r := range recs {
				fmt.Fprintln(tw, denialRow(r))
			}
			return tw.Flush()
		})
	fs := c.Flags()
	fs.BoolVarP(&follow, "follow", "f", false, "stream new records until interrupted")
	fs.StringVar(&f.Container, "container", "", "only the records of this registered container")
	fs.Uint64Var(&f.CgroupID, "cgroup-id", 0, "only the records of this cgroup id (process or deciding cgroup)")
	_ = c.RegisterFlagCompletionFunc("container", completeIDs(o))
	return c
}

// followDenials prints each new record as the daemon publishes it: a row
// (columns separated by two spaces, not aligned across rows; the header
// comes with the first record) or with
// --json one JSON object per line. An interrupt ends it with exit 0; the
// daemon closing the stream is a failure.
func followDenials(s cli.Streams, o *ctlOptions, f api.DenialFilter) error {
	ctx, cancel := interruptContext()
	defer cancel()
	enc := json.NewEncoder(s.Out)
	header := false
	err := o.client().FollowDenials(ctx, f, func(r audit.Record) error {
		if o.asJSON {
			return enc.Encode(r)
		}
		if !header {
			fmt.Fprintln(s.Out, denialHeaderFollow)
			header = true
		}
		_, err := fmt.Fprintln(s.Out, denialRowFollow(r))
		return err
	})
	switch {
	case ctx.Err() != nil:
		return nil
	case err == nil, errors.Is(err, io.ErrUnexpectedEOF): // closed at the end of a record, or within one
		return errStreamEnded
	}
	return err
}
