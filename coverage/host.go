package coverage

import (
	"errors"
	"os"
	"strconv"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// HostMechanisms are the process-level mechanisms this kernel offers to a
// process that restricts itself before exec'ing a command (the re-exec
// helper of `enforcerd run`, sandbox/fallback): Landlock, seccomp, and the
// sysctls that close some of their gaps. ProbeHost fills it; Of reads
// it for an entry with a ProcessLayer. JSON field names are stable (they
// appear in `enforcerd check --json`).
type HostMechanisms struct {
	// LandlockABI is the Landlock ABI version (1..), 0 when Landlock is
	// unusable (LandlockError says why).
	LandlockABI int `json:"landlock_abi"`
	// LandlockErrata is the bit set of fixed Landlock errata
	// (LANDLOCK_CREATE_RULESET_ERRATA; 0 on kernels that predate it).
	LandlockErrata int `json:"landlock_errata"`
	// LandlockError: "not built (ENOSYS)", "built but not enabled
	// (EOPNOTSUPP)" (not in lsm=), or another errno; "" when usable.
	LandlockError string `json:"landlock_error,omitempty"`
	// SeccompActions is /proc/sys/kernel/seccomp/actions_avail.
	SeccompActions []string `json:"seccomp_actions"`
	// SeccompError says why seccomp filters are unusable ("" when the
	// errno and allow actions are available).
	SeccompError string `json:"seccomp_error,omitempty"`
	// MemfdNoexec is vm.memfd_noexec (0, 1, 2; -1: no such sysctl, before
	// Linux 6.3). At 2 no memfd can be executed.
	MemfdNoexec int `json:"vm_memfd_noexec"`
	// IOURingDisabled is kernel.io_uring_disabled (0, 1, 2; -1: no such
	// sysctl, before Linux 6.6).
	IOURingDisabled int `json:"kernel_io_uring_disabled"`
	// LegacyTIOCSTI is dev.tty.legacy_tiocsti (0 or 1; -1: no such sysctl,
	// before Linux 6.2, where TIOCSTI always works).
	LegacyTIOCSTI int `json:"dev_tty_legacy_tiocsti"`
}

// Landlock reports whether Landlock can restrict a process here.
func (h HostMechanisms) Landlock() bool { return h.LandlockABI >= 1 }

// Seccomp reports whether a seccomp filter returning errno can be loaded.
func (h HostMechanisms) Seccomp() bool { return h.SeccompError == "" }

// ProbeHost probes the kernel: landlock_create_ruleset(NULL, 0,
// LANDLOCK_CREATE_RULESET_VERSION) and _ERRATA; actions_avail; the three
// sysctls. It never fails: what cannot be read is reported as absent.
func ProbeHost() HostMechanisms {
	h := HostMechanisms{MemfdNoexec: -1, IOURingDisabled: -1, LegacyTIOCSTI: -1}
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case errors.Is(err, unix.ENOSYS):
		h.LandlockError = "not built (ENOSYS)"
	case errors.Is(err, unix.EOPNOTSUPP):
		h.LandlockError = "built but not enabled (EOPNOTSUPP): landlock is not in lsm="
	case err != nil:
		h.LandlockError = err.Error()
	case abi < 1:
		h.LandlockError = "ABI version " + strconv.Itoa(abi)
	default:
		h.LandlockABI = abi
		if e, err := llsys.LandlockGetErrata(); err == nil && e > 0 {
			h.LandlockErrata = e
		}
	}
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		h.SeccompError = "cannot read actions_avail: " + err.Error()
	} else {
		h.SeccompActions = strings.Fields(string(b))
		h.SeccompError = missingSeccompActions(h.SeccompActions)
	}
	h.MemfdNoexec = readSysctl("/proc/sys/vm/memfd_noexec")
	h.IOURingDisabled = readSysctl("/proc/sys/kernel/io_uring_disabled")
	h.LegacyTIOCSTI = readSysctl("/proc/sys/dev/tty/legacy_tiocsti")
	return h
}

// missingSeccompActions names the actions the fallback filter needs that
// actions have not ("" when none is missing).
func missingSeccompActions(actions []string) string {
	var missing []string
	for _, want := range []string{"errno", "allow"} {
		found := false
		for _, a := range actions {
			found = found || a == want
		}
		if !found {
			missing = append(missing, want)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "seccomp actions missing: " + strings.Join(missing, ", ")
}

// readSysctl reads an integer sysctl file, -1 when it is absent or not an
// integer.
func readSysctl(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}
