package coverage

import (
	"fmt"
	"strconv"

	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Mechanism names (Coverage.Mechanisms, `enforcerd check`). Landlock is
// named with its ABI: "landlock-abi6".
const (
	MechBPFLSM        = "bpf-lsm"
	MechCgroupBPF     = "cgroup-bpf"
	MechLandlock      = "landlock"
	MechSeccomp       = "seccomp"
	MechContainerSpec = "container-spec"
)

// More gap codes (see the Gap* constants in coverage.go); a code is never
// renamed.
const (
	// GapNetworkEndpoints: allowed tcp/udp endpoints on a host where only
	// the cgroup-BPF layer enforces network=false. Its connect and sendmsg
	// hooks judge the destination address a connect or send names;
	// setsockopt options and control messages that route packets through
	// other hosts (IP source routes, IPv6 routing headers), which the BPF
	// LSM layer refuses, are not seen.
	GapNetworkEndpoints = "network-endpoints"
	// GapNetworkUnix: network=false enforced by the process layer
	// (seccomp on socket/socketpair families other than AF_UNIX, and on
	// io_uring_setup): unix sockets are not restricted (seccomp sees no
	// path; before Landlock ABI 6 abstract ones neither), so a peer
	// outside (a proxy, a broker) is reachable, and sockets inherited or
	// passed in over a unix socket work.
	GapNetworkUnix = "network-unix"
	// GapWriteInheritedFDs: write=false enforced by Landlock: it checks
	// opens, so files opened before the sandbox (inherited or passed-in
	// descriptors, a redirected stdout) stay writable.
	GapWriteInheritedFDs = "write-inherited-fds"
	// GapWriteTruncate: Landlock before ABI 3 (Linux 6.2) does not handle
	// truncation: truncate(2) and open(O_TRUNC) of a file the workload may
	// read and DAC lets it write empty it.
	GapWriteTruncate = "write-truncate"
	// GapShellCodeMapping: shell=none enforced by Landlock's EXECUTE
	// right: only exec is checked, not code mapped with mmap(PROT_EXEC).
	// The dynamic loader an allowed dynamic program needs runs any file
	// (ld.so /any/binary); written files can be mapped and run; an allowed
	// file the workload can write runs what was written into it.
	GapShellCodeMapping = "shell-code-mapping"
	// GapShellReadOnly: shell=read_only with write allowed has no process
	// layer mechanism (it needs the BPF LSM exec marks): programs the
	// workload execs may write.
	GapShellReadOnly = "shell-read-only"
)

// ProcessLayer is what `enforcerd run` applies to the command itself, on a
// host without BPF LSM, in a re-exec helper before exec'ing it
// (sandbox/fallback): no_new_privs, a Landlock ruleset and a seccomp
// filter. Containers have none (Landlock restricts only the calling process
// and its children: no OCI hook can apply it).
type ProcessLayer struct {
	// Host is what the kernel offers (ProbeHost).
	Host HostMechanisms
}

// landlockName is the mechanism name of Landlock at abi.
func landlockName(abi int) string { return MechLandlock + "-abi" + strconv.Itoa(abi) }

// hasInetEndpoint reports whether eps lists a tcp or udp endpoint.
func hasInetEndpoint(eps []endpoint.Endpoint) bool {
	for _, ep := range eps {
		if ep.Kind == endpoint.TCP || ep.Kind == endpoint.UDP {
			return true
		}
	}
	return false
}

// Of is the one fail-closed decision of what a host with kernel layers l
// enforces of a registration s: its ceiling, its allowed endpoints, and
// the process layer (`enforcerd run` without BPF LSM) or container spec
// layer it has. Every caller (enforcer's Register, run, the daemon's API
// and the OCI hook, `enforcerd check`) goes through it.
//   - With the BPF LSM layer every field is enforced in full.
//   - network=false: by seccomp when the process layer has it (GapNetworkUnix;
//     allowed tcp/udp endpoints then need cgroup-BPF for their addresses,
//     GapNetworkEndpoints), else by cgroup-BPF for AF_INET/AF_INET6 sockets
//     only (GapNetworkNonInet, GapNetworkEndpoints), else missing.
//   - write=false: by Landlock and seccomp together (GapWriteInheritedFDs;
//     GapWriteTruncate before ABI 3), else missing.
//   - shell=none: by Landlock and seccomp together (GapShellCodeMapping),
//     else missing. shell=read_only: with write=false the write denial
//     covers every exec'd program too; with write allowed the process
//     layer has nothing (GapShellReadOnly, partial), else missing.
//   - A container's spec layer (Subject.Spec, SpecLayer) covers write=false
//     (GapWriteInheritedFDs), and with it shell=read_only when no mount is
//     writable, and network=false in place of the cgroup-BPF-only coverage
//     (GapNetworkUnix); a field it does not cover names what the spec
//     lacks in its gap.
//   - Without BPF LSM nothing stops a privileged workload from leaving its
//     cgroup or detaching cgroup-BPF programs (GapTamper).
//
// Each step below judges one field, in this order: network, write, shell,
// tamper; the gaps keep that order.
func Of(s Subject, l Layers) Coverage {
	c := s.Ceiling
	if c.Network && c.Write && c.Shell == policy.ShellFull {
		return Coverage{}
	}
	if l.LSM == nil {
		return byBPFLSM(c)
	}
	j := newJudgement(s, l)
	if !c.Network {
		j.network()
	}
	if !c.Write {
		j.write()
	}
	if c.Shell != policy.ShellFull {
		j.shell()
	}
	j.tamper()
	return j.cov
}

// byBPFLSM is the coverage of a host with the BPF LSM layer: every
// restricted field, and the tamper protection, in full.
func byBPFLSM(c policy.KernelCeiling) Coverage {
	cov := Coverage{Mechanisms: map[string][]string{}}
	if !c.Network {
		cov.Mechanisms["network"] = []string{MechBPFLSM, MechCgroupBPF}
	}
	if !c.Write {
		cov.Mechanisms["write"] = []string{MechBPFLSM}
	}
	if c.Shell != policy.ShellFull {
		cov.Mechanisms["shell"] = []string{MechBPFLSM}
	}
	cov.Mechanisms["tamper"] = []string{MechBPFLSM}
	return cov
}

// judgement is the coverage of a registration without the BPF LSM layer,
// built one field at a time.
type judgement struct {
	s   Subject
	l   Layers
	cov Coverage
	// h is the process layer's host (zero without one); ll and sc say
	// whether its Landlock and seccomp are usable; procFS whether both
	// are (the file system rules need both).
	h              HostMechanisms
	ll, sc, procFS bool
	// noProcess says, for a gap's detail, why no process layer covers it.
	noProcess string
}

func newJudgement(s Subject, l Layers) *judgement {
	j := &judgement{s: s, l: l, cov: Coverage{Mechanisms: map[string][]string{}}}
	if s.Process != nil {
		j.h = s.Process.Host
		j.ll, j.sc = j.h.Landlock(), j.h.Seccomp()
	}
	j.procFS = j.ll && j.sc
	j.noProcess = processLayerAbsence(s.Process, j.ll, j.sc)
	return j
}

func (j *judgement) missing(code, field, detail string) {
	j.cov.Missing = append(j.cov.Missing, Gap{Code: code, Field: field, Detail: detail})
}

func (j *judgement) partial(code, field, detail string) {
	j.cov.Partial = append(j.cov.Partial, Gap{Code: code, Field: field, Detail: detail})
}

// network judges network=false: by seccomp (the process layer), by the
// container's spec, by cgroup-BPF alone, or missing.
func (j *judgement) network() {
	inet := hasInetEndpoint(j.s.AllowConnect)
	switch {
	case j.sc && inet && j.l.Cgroup != nil:
		j.missing(GapNetwork, "network", fmt.Sprintf("allowed tcp/udp endpoints need the cgroup-BPF address checks (%v); seccomp sees no address", j.l.Cgroup))
	case j.sc:
		j.networkBySeccomp(inet)
	case j.s.Spec != nil && j.s.Spec.Network:
		coverSpecNetwork(&j.cov, j.l.Cgroup, j.l.LSM)
	case j.l.Cgroup == nil:
		j.networkByCgroupBPF(inet)
	default:
		j.missing(GapNetwork, "network", fmt.Sprintf("no BPF LSM (%v) and no cgroup-BPF (%v)%s%s", j.l.LSM, j.l.Cgroup, j.noProcess, specMissing(j.s.Spec, j.s.Spec.networkMissing())))
	}
}

// networkBySeccomp credits network=false to the process layer's seccomp
// filter (with cgroup-BPF, and Landlock's TCP rules from ABI 4, for the
// allowed endpoints): partial, GapNetworkUnix, GapNetworkEndpoints.
func (j *judgement) networkBySeccomp(inet bool) {
	h, lsmErr := j.h, j.l.LSM
	m := []string{MechSeccomp}
	if j.l.Cgroup == nil {
		m = append(m, MechCgroupBPF)
	}
	if inet && j.ll && h.LandlockABI >= 4 {
		m = append(m, landlockName(h.LandlockABI))
	}
	j.cov.Mechanisms["network"] = m
	abstract := "pathname and abstract"
	if j.ll && h.LandlockABI >= 6 {
		abstract = "pathname (abstract ones are scoped by Landlock)"
	}
	j.partial(GapNetworkUnix, "network", fmt.Sprintf("seccomp denies every socket family but AF_UNIX (and io_uring); %s unix sockets still reach peers outside (a proxy or broker), and sockets inherited or passed in over them work: that needs BPF LSM (%v)", abstract, lsmErr))
	if !inet {
		return
	}
	bind := "UDP sockets can bind and receive from any peer"
	if !j.ll || h.LandlockABI < 4 {
		bind = "TCP and UDP sockets can bind, listen and receive from any peer (Landlock denies TCP bind from ABI 4)"
	}
	j.partial(GapNetworkEndpoints, "network", fmt.Sprintf("allowed tcp/udp endpoints are checked by destination address only (cgroup-BPF; Landlock, from ABI 4, by TCP port only); %s; socket options and control messages that route packets through other hosts (IP source routes) need BPF LSM (%v)", bind, lsmErr))
}

// networkByCgroupBPF credits network=false to the cgroup-BPF socket hooks
// alone: partial, GapNetworkNonInet (and GapNetworkEndpoints).
func (j *judgement) networkByCgroupBPF(inet bool) {
	lsmErr := j.l.LSM
	j.cov.Mechanisms["network"] = []string{MechCgroupBPF}
	j.partial(GapNetworkNonInet, "network", fmt.Sprintf("only AF_INET/AF_INET6 sockets the workload creates are denied (cgroup-BPF); other socket families, unix sockets to a broker outside, inherited or passed-in sockets and tun/tap devices need BPF LSM (%v)%s%s", lsmErr, j.noProcess, specMissing(j.s.Spec, j.s.Spec.networkMissing())))
	if inet {
		j.partial(GapNetworkEndpoints, "network", fmt.Sprintf("allowed tcp/udp endpoints are checked by destination address only (cgroup-BPF); socket options and control messages that route packets through other hosts (IP source routes) need BPF LSM (%v)", lsmErr))
	}
}

// write judges write=false: by Landlock and seccomp (the process layer),
// by the container's spec, or missing.
func (j *judgement) write() {
	h, lsmErr := j.h, j.l.LSM
	switch {
	case j.procFS:
		j.cov.Mechanisms["write"] = []string{landlockName(h.LandlockABI), MechSeccomp}
		j.partial(GapWriteInheritedFDs, "write", fmt.Sprintf("Landlock checks opens: files opened before the sandbox (inherited or passed-in descriptors, a redirected stdout) stay writable; BPF LSM checks every write (%v)", lsmErr))
		if h.LandlockABI < 3 {
			j.partial(GapWriteTruncate, "write", fmt.Sprintf("Landlock ABI %d does not handle truncation (ABI 3, Linux 6.2): truncate(2) and open(O_TRUNC) empty a readable file DAC lets the workload write", h.LandlockABI))
		}
	case j.s.Spec != nil && j.s.Spec.Write:
		coverSpecWrite(&j.cov, j.s.Spec, lsmErr)
	default:
		j.missing(GapWrite, "write", fmt.Sprintf("write=false (and its writable roots) needs BPF LSM programs: %v%s%s", lsmErr, j.noProcess, specMissing(j.s.Spec, j.s.Spec.writeMissing())))
	}
}

// shell judges a shell ceiling other than full: shell=none by Landlock and
// seccomp; shell=read_only by the write denial (the process layer's, or a
// read-only container's); else partial (read_only with write allowed) or
// missing.
func (j *judgement) shell() {
	c, lsmErr := j.s.Ceiling, j.l.LSM
	switch {
	case j.procFS && c.Shell == policy.ShellNone:
		j.cov.Mechanisms["shell"] = []string{landlockName(j.h.LandlockABI), MechSeccomp}
		j.partial(GapShellCodeMapping, "shell", fmt.Sprintf("Landlock checks exec only, not code mapped with mmap(PROT_EXEC): the dynamic loader a dynamic program needs runs any file (ld.so /any/binary), written files can be mapped and run, an allowed file the workload can write runs what was written into it; BPF LSM checks mappings (%v)", lsmErr))
	case j.procFS && !c.Write:
		// read_only: no exec'd program may write, and write=false
		// already denies every process of the tree.
		j.cov.Mechanisms["shell"] = []string{landlockName(j.h.LandlockABI), MechSeccomp}
	case !c.Write && c.Shell == policy.ShellReadOnly && readOnlyContainer(j.s.Spec):
		// read_only under a read-only container: no process of it can
		// write, exec'd programs included.
		j.cov.Mechanisms["shell"] = []string{MechContainerSpec}
	case j.procFS:
		j.partial(GapShellReadOnly, "shell", fmt.Sprintf("shell=read_only with write allowed: nothing stops exec'd programs from writing (it needs the BPF LSM exec marks: %v)", lsmErr))
	default:
		j.missing(GapShell, "shell", fmt.Sprintf("shell=%s needs BPF LSM programs: %v%s", c.Shell, lsmErr, j.noProcess))
	}
}

// readOnlyContainer: the container's spec covers write=false with no
// read-write mount at all.
func readOnlyContainer(s *SpecLayer) bool {
	return s != nil && s.Write && len(s.WritableMounts) == 0
}

// tamper is the gap every registration without BPF LSM has: nothing stops
// a privileged workload from leaving its cgroup or detaching the
// programs (GapTamper); a process layer's no_new_privs, Landlock domain
// and seccomp filter stay with every process.
func (j *judgement) tamper() {
	lsmErr := j.l.LSM
	detail := fmt.Sprintf("a privileged workload can leave its cgroup or detach the programs, and the rules that hold under every ceiling (device nodes and terminals, IPC objects made outside, kernel tunables, the task name) are not enforced: they need BPF LSM (%v)", lsmErr)
	if j.s.Process != nil && (j.ll || j.sc) {
		detail = fmt.Sprintf("a privileged workload can leave its cgroup or detach the cgroup-BPF programs (the Landlock domain and seccomp filter stay with every process), and the rules that hold under every ceiling (device nodes and terminals, IPC objects made outside, kernel tunables, the task name) are not enforced: they need BPF LSM (%v)", lsmErr)
		j.cov.Mechanisms["tamper"] = []string{"no_new_privs"}
	}
	j.partial(GapTamper, "all", detail)
}

// processLayerAbsence says, for a gap's detail, why no process layer
// covers it ("" when Landlock and seccomp are both usable).
func processLayerAbsence(p *ProcessLayer, ll, sc bool) string {
	switch {
	case p == nil:
		return ""
	case !ll && !sc:
		return fmt.Sprintf("; no fallback: Landlock %s, seccomp: %s", p.Host.LandlockError, p.Host.SeccompError)
	case !ll:
		return fmt.Sprintf("; no fallback: Landlock %s", p.Host.LandlockError)
	case !sc:
		return fmt.Sprintf("; no fallback: %s", p.Host.SeccompError)
	}
	return ""
}
