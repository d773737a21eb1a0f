// Package check is "enforcerd check": what this host's kernel can enforce of
// each ceiling field, with which mechanism, and what a full coverage needs
// (coverage.ProbeHost, the coverage rule). It imports the library packages
// and cmd/enforcerd/cli, no other command's package.
package check

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/oci/speccheck"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/coverage"
)

const checkUsage = `Usage: enforcerd check [--json | --verbose] [--pin-dir DIR]

Report what this host can enforce: whether BPF LSM is active and its programs
load, kernel BTF, the cgroup v2 mount, every hook (attached, re-adopted from a
pin, or why not), and for each ceiling field whether it is enforceable and by
which layer; the Landlock ABI, seccomp actions and sysctls
"enforcerd run" can fall back on without BPF LSM; and the coverage per
entry ("run", "containers", "containers-spec": a container whose runtime
spec gives every write and network rule) and field (network, write,
shell=none, shell=read_only, tamper): full, partial or none, the
mechanisms, and each gap by its code; and the rules a container's spec
must give per field (docs/no-bpf-lsm.md, "Containers").

check loads and pins the programs exactly as "enforcerd run" and the daemon
would (re-adopting existing pins), so what it reports is what a workload
would get. Programs with no registered cgroup deny nothing. check leaves
nothing it did not find: when the pin directory did not exist, it removes
the pins it created before it exits ("left behind" says which).

A layer that fails for one reason prints it once, with its programs'
count ("layer bpf-lsm: NOT AVAILABLE: 0/N hooks attached: REASON"); the
details below it refer to it instead of repeating it.

Flags:
  --json          machine-readable report (fields: kernel, cgroup2, btf,
                  active_lsms, bpf_lsm_active, layers{name: {ok, error}},
                  hooks[{program, hook, layer, attached, adopted, optional,
                  error}] (as the daemon's GET /v1/status),
                  fields{network|write|shell: {enforceable, by, detail, unenforced}},
                  enforceable, left_behind,
                  host{landlock_abi, landlock_errata, landlock_error,
                  seccomp_actions, seccomp_error, vm_memfd_noexec,
                  kernel_io_uring_disabled, dev_tty_legacy_tiocsti} (-1:
                  no such sysctl),
                  coverage{run|containers|containers-spec: [{field, state, by,
                  mechanisms, gaps[{code, field, detail}]}]} where field
                  is network, write, shell=none, shell=read_only or
                  tamper, state full|partial|none, by the mechanism
                  that enforces it ("" for none), mechanisms among bpf-lsm,
                  cgroup-bpf, landlock-abiN, seccomp, no_new_privs,
                  container-spec),
                  container_spec_rules{write|network: [rule names]};
                  every key of a field or coverage row is always present,
                  a list empty ([]) rather than null
  -v, --verbose   also print every program (hook), one row each: its
                  layer and whether it is attached, or why not
  --pin-dir DIR   bpffs directory of the pinned programs and maps
                  (default /sys/fs/bpf/enforcerd)

Exit status: 0 every ceiling field is enforceable; 1 at least one is not
(the report says which and why); 2 usage error.
`

// checkField is one field of the report. Every key is always present, a
// list empty rather than null, so each field has one shape
// (jsonShape).
type checkField struct {
	// Enforceable: enforced in full.
	Enforceable bool   `json:"enforceable"`
	By          string `json:"by"`
	Detail      string `json:"detail"`
	// Unenforced: what is not enforced when the field is enforced only in
	// part (registrations are then refused unless partial coverage is
	// allowed); empty otherwise.
	Unenforced []coverage.Gap `json:"unenforced"`
}

// checkCoverageField is a coverage.Field of the report with every key
// present: by "" for state none, mechanisms and gaps [] when empty.
type checkCoverageField struct {
	Field      string         `json:"field"`
	State      string         `json:"state"`
	By         string         `json:"by"`
	Mechanisms []string       `json:"mechanisms"`
	Gaps       []coverage.Gap `json:"gaps"`
}

// jsonShape is r as check --json prints it: the same keys for every
// field and every coverage row, lists [] rather than null.
func jsonShape(r CheckReport) any {
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	fields := map[string]checkField{}
	for name, f := range r.Fields {
		if f.Unenforced == nil {
			f.Unenforced = []coverage.Gap{}
		}
		fields[name] = f
	}
	cov := map[string][]checkCoverageField{}
	for entry, fcs := range r.Coverage {
		rows := []checkCoverageField{}
		for _, fc := range fcs {
			row := checkCoverageField{Field: fc.Field, State: fc.State, By: fc.By, Mechanisms: orEmpty(fc.Mechanisms), Gaps: fc.Gaps}
			if row.Gaps == nil {
				row.Gaps = []coverage.Gap{}
			}
			rows = append(rows, row)
		}
		cov[entry] = rows
	}
	if r.Hooks == nil {
		r.Hooks = []api.HookStatus{}
	}
	r.ActiveLSMs, r.Host.SeccompActions = orEmpty(r.ActiveLSMs), orEmpty(r.Host.SeccompActions)
	for f, rules := range r.ContainerSpecRules {
		r.ContainerSpecRules[f] = orEmpty(rules)
	}
	return struct {
		CheckReport
		Fields   map[string]checkField           `json:"fields"`
		Coverage map[string][]checkCoverageField `json:"coverage"`
	}{r, fields, cov}
}

type checkLayer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

type CheckReport struct {
	Kernel       string                `json:"kernel"`
	Cgroup2      string                `json:"cgroup2"`
	BTF          bool                  `json:"btf"`
	ActiveLSMs   []string              `json:"active_lsms"`
	BPFLSMActive bool                  `json:"bpf_lsm_active"`
	Layers       map[string]checkLayer `json:"layers"`
	Hooks        []api.HookStatus      `json:"hooks"`
	Fields       map[string]checkField `json:"fields"`
	Enforceable  bool                  `json:"enforceable"`
	// Host: the process-level mechanisms (Landlock ABI and errata,
	// seccomp actions, sysctls) `enforcerd run` can add without BPF LSM.
	Host coverage.HostMechanisms `json:"host"`
	// Coverage per entry ("run": enforcerd run, with its process layer;
	// "containers": the OCI hook and the daemon's API), per field
	// (network, write, shell=none, shell=read_only, tamper): state full |
	// partial | none, mechanisms, gaps; "containers-spec": a container
	// whose runtime spec gives every rule of ContainerSpecRules.
	Coverage map[string][]coverage.Field `json:"coverage"`
	// ContainerSpecRules are the rules (speccheck.WriteRules,
	// speccheck.NetworkRules) a container's runtime spec must give for
	// the field ("write", "network") to be credited on a host without
	// BPF LSM.
	ContainerSpecRules map[string][]string `json:"container_spec_rules"`
	Error              string              `json:"error,omitempty"`
	// LeftBehind says what check leaves in the kernel: the pins it found
	// (as found, re-adopted), or nothing (it removes the pins it created).
	LeftBehind string `json:"left_behind"`
}

func NewCommand(s cli.Streams) *cobra.Command {
	var asJSON, verbose bool
	var pinDir string
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "check",
		Summary: "report what this kernel can enforce",
		Help:    checkUsage,
		Run: func(*cobra.Command, []string) error {
			if asJSON && verbose {
				return cli.UsageErrorf("--json and --verbose together: --json always has every program; give one of them")
			}
			if err := cli.NeedsRoot("loading eBPF programs to test them"); err != nil {
				return err
			}
			found, err := enforcer.ReadInstallation(pinDir)
			if err != nil {
				return err
			}
			r := buildCheckReport(pinDir, s.Err)
			r.LeftBehind = fmt.Sprintf("the pins under %s, as found", pinDir)
			if !found.Present {
				// Nothing was installed: leave nothing.
				// Unless someone started using them meanwhile (a first
				// daemon or run: a registration or a recorded daemon).
				in, err := enforcer.ReadInstallation(pinDir)
				if err != nil {
					return err
				}
				if len(in.Registrations) == 0 && !in.HostPolicyRecorded {
					if err := in.RemovePins(cli.LinkReleaseWait); err != nil {
						return fmt.Errorf("removing the pins check created under %s: %w", pinDir, err)
					}
					r.LeftBehind = fmt.Sprintf("nothing (no pins were under %s; the ones check created are removed)", pinDir)
				} else {
					r.LeftBehind = fmt.Sprintf("the pins under %s, which a daemon or run started using while check ran", pinDir)
				}
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				_ = enc.Encode(jsonShape(r))
			} else {
				printCheckReport(s.Out, r, verbose)
			}
			if !r.Enforceable {
				return cli.ExitCode(cli.ExitFailure)
			}
			return nil
		},
	})
	cli.JsonFlag(c.Flags(), &asJSON)
	cli.PinDirFlag(c.Flags(), &pinDir)
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "every program's attachment, one row each")
	return c
}

// buildCheckReport opens the enforcer as run would (verifier logs to
// stderr when asked) and reports what it enforces.
func buildCheckReport(pinDir string, stderr io.Writer) CheckReport {
	r := CheckReport{Layers: map[string]checkLayer{}, Fields: map[string]checkField{}, Host: coverage.ProbeHost(),
		ContainerSpecRules: map[string][]string{"write": speccheck.WriteRules, "network": speccheck.NetworkRules}}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		r.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	r.BTF = err == nil
	lsms, err := enforcer.ActiveLSMs()
	if err != nil {
		r.Error = err.Error()
	}
	r.ActiveLSMs = lsms
	for _, l := range lsms {
		if l == "bpf" {
			r.BPFLSMActive = true
		}
	}
	notEnforceable := func(why string) {
		for _, f := range []string{"network", "write", "shell"} {
			r.Fields[f] = checkField{Detail: why}
		}
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		r.Error = err.Error()
		notEnforceable(err.Error())
		return r
	}
	r.Cgroup2 = mount
	enf, err := enforcer.Open(enforcer.Options{PinDir: pinDir, CgroupMount: mount, VerifierLog: cli.VerifierLog(stderr)})
	if err != nil {
		r.Error = err.Error()
		notEnforceable(err.Error())
		return r
	}
	defer enf.Close()
	for _, l := range []coverage.Layer{coverage.LayerLSM, coverage.LayerCgroup, coverage.LayerLifecycle} {
		cl := checkLayer{OK: enf.LayerError(l) == nil}
		if !cl.OK {
			cl.Error = enf.LayerError(l).Error()
		}
		r.Layers[string(l)] = cl
	}
	r.Hooks = api.HooksFrom(enf.Hooks())
	r.Coverage = map[string][]coverage.Field{
		"run":        enf.ReportFor(&coverage.ProcessLayer{Host: r.Host}),
		"containers": enf.ReportFor(nil),
		// A container whose spec gives every rule, no writable mount.
		"containers-spec": enf.ReportForSpec(nil, &coverage.SpecLayer{Write: true, Network: true}),
	}
	for _, fc := range enf.Report() {
		switch fc.State {
		case coverage.StateNone:
			r.Fields[fc.Field] = checkField{Detail: fc.Gaps[0].Detail}
		case coverage.StatePartial:
			r.Fields[fc.Field] = checkField{By: fc.By, Unenforced: fc.Gaps,
				Detail: "enforced only in part: refused unless partial coverage is allowed (run --allow-partial, daemon allow_partial: true)"}
		default:
			r.Fields[fc.Field] = checkField{Enforceable: true, By: fc.By}
		}
	}
	r.Enforceable = true
	for _, f := range r.Fields {
		if !f.Enforceable {
			r.Enforceable = false
		}
	}
	return r
}

// printCheckReport prints r for people: a layer's failure reason once
// (the per-layer hook lines and every later detail refer to it), each
// layer's hooks as one line with a count (cli.GroupHooks), and with
// verbose every program's row.
func printCheckReport(w io.Writer, r CheckReport, verbose bool) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "kernel:          %s\n", r.Kernel)
	fmt.Fprintf(w, "cgroup2 mount:   %s\n", cli.OrDash(r.Cgroup2))
	fmt.Fprintf(w, "kernel BTF:      %s\n", yes(r.BTF))
	fmt.Fprintf(w, "active LSMs:     %s (bpf active: %s)\n", strings.Join(r.ActiveLSMs, ","), yes(r.BPFLSMActive))
	if r.Error != "" {
		fmt.Fprintf(w, "error:           %s\n", r.Error)
	}
	said := printLayers(w, r)
	fmt.Fprintf(w, "left behind:     %s\n", r.LeftBehind)
	printHost(w, r.Host)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "containers (OCI hook, NRI plugin, API), by the kernel programs alone:")
	for _, f := range []string{"network", "write", "shell"} {
		cf := r.Fields[f]
		switch {
		case cf.Enforceable:
			fmt.Fprintf(w, "%-8s enforceable: %s\n", f+":", cf.By)
		case len(cf.Unenforced) > 0:
			fmt.Fprintf(w, "%-8s PARTIAL (refused unless partial coverage is allowed): %s\n", f+":", cf.By)
			for _, g := range cf.Unenforced {
				fmt.Fprintf(w, "%-8s   not enforced: %s\n", "", said.Replace(g.String()))
			}
		default:
			fmt.Fprintf(w, "%-8s NOT enforceable: %s\n", f+":", said.Replace(cf.Detail))
		}
	}
	printCoverage(w, r.Coverage, said)
	printSpecRules(w, r.ContainerSpecRules)
	if verbose && len(r.Hooks) > 0 {
		fmt.Fprintln(w, "\nhooks:")
		_ = cli.PrintHookTable(w, r.Hooks)
	}
}

// printLayers prints each layer's state and its hooks in one line, each
// reason once, and returns the replacer that turns a reason printed here
// into a reference to it ("the bpf-lsm layer's reason above") in the
// details printed after.
func printLayers(w io.Writer, r CheckReport) *strings.Replacer {
	var pairs []string
	groups := map[string]cli.LayerHooks{}
	for _, g := range cli.GroupHooks(r.Hooks) {
		groups[g.Layer] = g
	}
	for _, l := range []string{"bpf-lsm", "cgroup-bpf", "lifecycle"} {
		cl, ok := r.Layers[l]
		if !ok {
			continue
		}
		g, hooks := groups[l]
		if cl.OK {
			line := "ok"
			if hooks {
				line += "; " + strings.TrimPrefix(g.String(), l+": ")
			}
			fmt.Fprintf(w, "layer %-10s %s\n", l+":", line)
			continue
		}
		ref := "(the " + l + " layer's reason above)"
		if hooks && len(g.Reasons) == 1 && g.Optional == 0 && strings.Contains(cl.Error, g.Reasons[0].Error) {
			// One reason for the layer and every hook: one line.
			fmt.Fprintf(w, "layer %-10s NOT AVAILABLE: %d/%d hooks attached: %s\n", l+":", g.Attached, g.Total, cl.Error)
		} else if fmt.Fprintf(w, "layer %-10s NOT AVAILABLE: %s\n", l+":", cl.Error); hooks {
			// A hook's reason the layer's error already says is not
			// repeated.
			for i, rs := range g.Reasons {
				if strings.Contains(cl.Error, rs.Error) {
					g.Reasons[i].Error = ref
				}
			}
			fmt.Fprintf(w, "  %s\n", g)
		}
		if len(cl.Error) >= 16 {
			pairs = append(pairs, cl.Error, ref)
		}
	}
	return strings.NewReplacer(pairs...)
}

// printSpecRules prints the rules a container's runtime spec must give,
// per field.
func printSpecRules(w io.Writer, rules map[string][]string) {
	if len(rules) == 0 {
		return
	}
	fmt.Fprintf(w, "\ncontainer spec rules (without BPF LSM, docs/no-bpf-lsm.md):\n")
	for _, f := range []string{"write", "network"} {
		fmt.Fprintf(w, "  %-16s %s\n", f, strings.Join(rules[f], ", "))
	}
}

// printHost prints the process-level mechanisms.
func printHost(w io.Writer, h coverage.HostMechanisms) {
	ll := fmt.Sprintf("ABI %d (errata %#x)", h.LandlockABI, h.LandlockErrata)
	if h.LandlockABI == 0 {
		ll = "unusable: " + h.LandlockError
	}
	fmt.Fprintf(w, "landlock:        %s\n", ll)
	sc := strings.Join(h.SeccompActions, ",")
	if h.SeccompError != "" {
		sc += " (unusable: " + h.SeccompError + ")"
	}
	fmt.Fprintf(w, "seccomp actions: %s\n", cli.OrDash(sc))
	sysctl := func(v int) string {
		if v < 0 {
			return "absent"
		}
		return fmt.Sprint(v)
	}
	fmt.Fprintf(w, "sysctls:         vm.memfd_noexec=%s kernel.io_uring_disabled=%s dev.tty.legacy_tiocsti=%s\n",
		sysctl(h.MemfdNoexec), sysctl(h.IOURingDisabled), sysctl(h.LegacyTIOCSTI))
}

// printCoverage prints the coverage of each entry kind, field by field,
// with every gap on its own line (said: the reasons printed above).
func printCoverage(w io.Writer, cov map[string][]coverage.Field, said *strings.Replacer) {
	for _, entry := range []string{"run", "containers", "containers-spec"} {
		fcs, ok := cov[entry]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "\ncoverage of %s:\n", entry)
		for _, fc := range fcs {
			fmt.Fprintf(w, "  %-16s %-8s %s\n", fc.Field, fc.State, cli.OrDash(strings.Join(fc.Mechanisms, ", ")))
			for _, g := range fc.Gaps {
				fmt.Fprintf(w, "  %-16s   gap %s\n", "", said.Replace(g.String()))
			}
		}
	}
}
