package run

// run's registration through the enforcerd daemon: when a daemon using the
// same pins answers on --socket, the run's cgroup is one of its containers
// (listed, persisted, swept and audited like any other) instead of an
// entry run writes into the pinned maps behind the daemon's back.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/ownterm"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/sandbox"
)

// daemonRegisterTimeout bounds each of run's requests to the daemon.
const daemonRegisterTimeout = 10 * time.Second

// daemonRunning reports whether something accepts connections on the
// daemon's socket.
func daemonRunning(socket string) bool {
	c, err := net.DialTimeout("unix", socket, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// daemonSession is run's conversation with the enforcerd daemon on
// --socket: one client, and the daemon's status read at most once (the
// first question that needs it), for every question run asks: does it
// allow partial coverage, does it read this run's pins, register the
// run's cgroup, stream its denials.
type daemonSession struct {
	socket string
	client *api.Client

	asked   bool // status, running and statusErr are set
	running bool // something accepts connections on socket
	status  api.Status
	// statusErr is why a running daemon's status could not be read.
	statusErr error
}

func newDaemonSession(socket string) *daemonSession {
	return &daemonSession{socket: socket, client: api.NewClient(socket, daemonRegisterTimeout)}
}

// ask reads the daemon's status, once: whether something accepts
// connections on the socket and, if so, its status.
func (d *daemonSession) ask() {
	if d.asked {
		return
	}
	d.asked = true
	if d.running = daemonRunning(d.socket); !d.running {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.status, d.statusErr = d.client.Status(ctx)
}

// allowsPartial returns nil when no daemon answers or the one that
// answers allows partial coverage (allow_partial: true), else why not. A
// daemon that answers but whose status cannot be read refuses (fail
// closed).
func (d *daemonSession) allowsPartial() error {
	d.ask()
	switch {
	case !d.running:
		return nil
	case d.statusErr != nil:
		return fmt.Errorf("the enforcerd daemon at %s answers but its status cannot be read (%v): refusing partial coverage", d.socket, d.statusErr)
	case !d.status.AllowPartial:
		return fmt.Errorf("the enforcerd daemon at %s does not allow partial coverage (allow_partial is not true in its configuration), which caps this flag", d.socket)
	}
	return nil
}

// readsRecords reports whether a daemon answers and reads the denial
// records of the programs pinned in pinDir (its status names the same pin
// directory). Another pin directory has its own ring buffer, which no
// daemon reads.
func (d *daemonSession) readsRecords(pinDir string) bool {
	d.ask()
	return d.running && d.statusErr == nil && filepath.Clean(d.status.PinDir) == filepath.Clean(pinDir)
}

// registrar is the sandbox.InitRegistrar that registers the run o of CMD
// (bin) with the daemon.
func (d *daemonSession) registrar(o runOptions, bin string) *daemonRegistrar {
	return &daemonRegistrar{client: d.client, o: o, bin: bin}
}

// daemonStreamGrace is how long run keeps reading the daemon's stream after
// CMD ended: the daemon publishes a record once it read it from the kernel.
const daemonStreamGrace = 300 * time.Millisecond

// followDenials prints the denial records of cgroup id cgid that the
// daemon publishes, from the moment it returns (the daemon has
// subscribed) until the returned stop is called (then daemonStreamGrace
// more). stop returns 0: losses are the daemon's to count
// (enforcerd_ringbuf_lost_records_total). Errors: the stream could not be
// opened.
func (d *daemonSession) followDenials(cgid uint64, w io.Writer) (stop func() uint64, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.client.FollowDenialsSubscribed(ctx, api.DenialFilter{CgroupID: cgid}, func() { close(subscribed) },
			func(r audit.Record) error {
				// The stream also carries the daemon's own records of
				// the cgroup (registration, activation: run registers
				// through the daemon): only the kernel's denials are
				// printed, as without a daemon.
				if r.Type == audit.TypeDenial {
					printRecord(w, r)
				}
				return nil
			})
	}()
	select {
	case <-subscribed:
	case err := <-done:
		cancel()
		return nil, err
	case <-time.After(10 * time.Second):
		cancel()
		return nil, errors.New("no answer within 10s")
	}
	return func() uint64 {
		time.Sleep(daemonStreamGrace)
		cancel()
		<-done
		return 0
	}, nil
}

// daemonRegistrar is a sandbox.InitRegistrar that registers run's cgroup
// with the daemon on its socket: POST /v1/containers with activate=exec
// and init_pid the exec gate's pid (the only process in the cgroup until
// it execs CMD), the ceiling as ceiling text, and the entrypoint, the
// allowed endpoints and the writable roots by path (the daemon resolves
// them again, on this host: entrypoint root "/").
type daemonRegistrar struct {
	client *api.Client
	o      runOptions
	bin    string // CMD's program, as exec.LookPath found it
	id     string // set by RegisterInit
}

var _ sandbox.InitRegistrar = (*daemonRegistrar)(nil)

// runContainerID is the daemon's container id of run's cgroup cg: its
// name and its cgroup id (a pid is reused, a cgroup id is not).
func runContainerID(cg cgroup.Cgroup) string {
	return fmt.Sprintf("%s-%d", path.Base(cg.Group), cg.ID)
}

// Register is not used: the daemon's registration names the init
// (RegisterInit).
func (d *daemonRegistrar) Register(cg cgroup.Cgroup, _ entry.Entry) error {
	return fmt.Errorf("%w: registering cgroup %s through the enforcerd daemon needs the pid of its init", coverage.ErrCannotEnforce, cg)
}

// RegisterInit asks the daemon to register cg with e's ceiling, pending
// until initPID's first exec. Errors: the daemon refused (the message
// names its error code) or did not answer; nothing is registered then.
func (d *daemonRegistrar) RegisterInit(cg cgroup.Cgroup, e entry.Entry, initPID int) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	req := api.RegisterRequest{
		ID: runContainerID(cg), Cgroup: cg.Group, Ceiling: e.Ceiling.String(), AuditOnly: e.AuditOnly,
		Activate: api.ActivateExec, InitPID: initPID,
		Entrypoint:   &api.Entrypoint{Path: d.bin, Root: "/", Cwd: wd},
		AllowConnect: endpoint.Strings(d.o.allowConnect),
		WriteRoots:   d.o.writeRoots,
		// By number: the paths were resolved when run started.
		AllowDevices: devallow.Numbers(d.o.allowDevices),
		// The daemon reads run's own terminals (this process's stdio
		// and controlling terminal, which CMD inherits).
		OwnTerminals:      api.OwnTerminalsClient,
		DenyConsoleEgress: d.o.denyConsole,
	}
	for _, f := range d.o.execAllow {
		abs := f
		if !path.IsAbs(abs) {
			abs = path.Join(wd, f)
		}
		req.ExecAllow = append(req.ExecAllow, abs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), daemonRegisterTimeout)
	defer cancel()
	ct, err := d.client.Register(ctx, req)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return fmt.Errorf("the enforcerd daemon at %s refused to register cgroup %s (error code %s, HTTP %d): %s", d.o.socket, cg.Group, ae.Code, ae.Status, ae.Message)
		}
		return fmt.Errorf("registering cgroup %s with the enforcerd daemon at %s: %w", cg.Group, d.o.socket, err)
	}
	d.id = req.ID
	err = checkRunAnswer(ct, e.Ceiling, req.ExecAllow)
	if err == nil {
		err = checkRunDevices(ct, req.AllowDevices, e.Terminals)
	}
	if err != nil {
		// Not what run asked for: take it back, and never run CMD.
		uerr := d.Unregister(cg)
		return fmt.Errorf("the enforcerd daemon at %s registered cgroup %s wider than asked: %v (unregistering it: %v)", d.o.socket, cg.Group, err, uerr)
	}
	return nil
}

// checkRunAnswer checks the daemon's answer to run's registration: its
// kernel ceiling must be at most want in every field (the daemon may
// narrow it, meeting an enclosing ceiling, never widen it), and under
// shell=none its exec allow list must hold only files run asked for
// (execAllow, by path; the daemon may drop some when an enclosing list
// does not name them). Errors name the first field that is wider.
func checkRunAnswer(ct api.Container, want policy.KernelCeiling, execAllow []string) error {
	if want.Clamp(ct.Kernel) != ct.Kernel {
		return fmt.Errorf("kernel ceiling %s, asked for %s", ct.Kernel, want)
	}
	if ct.Kernel.Shell == policy.ShellNone {
		asked := make(map[string]bool, len(execAllow))
		for _, f := range execAllow {
			asked[path.Clean(f)] = true
		}
		for _, f := range ct.ExecAllow {
			if !asked[path.Clean(f)] {
				return fmt.Errorf("exec allow list names %s, which run did not ask for", f)
			}
		}
	}
	return nil
}

// Unregister removes the container (after every process of cg was
// killed). A container the daemon no longer knows (it swept the removed
// cgroup first) is not an error.
func (d *daemonRegistrar) Unregister(cg cgroup.Cgroup) error {
	id := d.id
	if id == "" {
		id = runContainerID(cg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), daemonRegisterTimeout)
	defer cancel()
	err := d.client.Unregister(ctx, id)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == 404 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unregistering container %s from the enforcerd daemon at %s: %w", id, d.o.socket, err)
	}
	return nil
}

// checkRunDevices checks the daemon's answer to run's registration for
// devices and terminals: every allowed device must be one run asked for
// (by number; the daemon may drop some when an enclosing list does not
// name them), and every own terminal one run declared itself (the
// daemon reads them from run's process: the same, unless run's stdio
// changed). Errors name the first that is not.
func checkRunDevices(ct api.Container, asked []string, own []entry.Terminal) error {
	want, err := devallow.ParseList(asked)
	if err != nil {
		return err
	}
	for _, s := range ct.AllowDevices {
		num, _, _ := strings.Cut(s, " (")
		d, err := devallow.Parse(num)
		if err != nil || !slices.ContainsFunc(want, func(w devallow.Device) bool { return devallow.Same(w, d) }) {
			return fmt.Errorf("allowed devices name %s, which run did not ask for", s)
		}
	}
	mine := ownterm.Strings(own)
	for _, t := range ct.Terminals {
		if !slices.Contains(mine, t) {
			return fmt.Errorf("own terminals name %s, which is not one of run's (%q)", t, mine)
		}
	}
	return nil
}
