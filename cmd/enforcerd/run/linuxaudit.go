package run

import (
	"fmt"
	"io"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/sandbox"
)

// linuxAuditRate bounds run's AUDIT_USER_AVC messages a second (burst
// twice that), as the daemon's default audit.linux_audit_rate_per_second.
const linuxAuditRate = 50

// runAuditTrail sends the denial records run reads itself to the Linux
// audit trail (--linux-audit): each as an AUDIT_USER_AVC message
// (audit.AVCText), container "enforcerd-run-PID-CGROUPID" as the daemon
// names a run it registers. When the kernel would not take them (no
// CAP_AUDIT_WRITE, another user namespace, no audit support), run says so
// once on stderr, also with --quiet, and runs CMD all the same.
type runAuditTrail struct {
	la        *audit.LinuxAudit
	container string
}

// newRunAuditTrail opens the audit socket and asks the kernel, writing
// nothing, whether it takes the messages (audit.AuditNetlink.Probe);
// a refusal is printed once to stderr and nil returned.
func newRunAuditTrail(stderr io.Writer, container string) *runAuditTrail {
	nl, err := audit.DialAuditNetlink()
	if err == nil {
		if err = nl.Probe(); err != nil {
			nl.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "enforcerd run: --linux-audit: denials are not sent to the Linux audit trail: %v\n", err)
		return nil
	}
	failed := func(err error) {
		fmt.Fprintf(stderr, "enforcerd run: --linux-audit: a denial could not be sent to the Linux audit trail (further failures not printed): %v\n", err)
	}
	la := audit.NewLinuxAudit(func(typ uint16, text string) error { return nl.SendUser(typ, text) }, linuxAuditRate, nil, failed)
	return &runAuditTrail{la: la, container: container}
}

// record sends d.
func (a *runAuditTrail) record(d sandbox.Denial) {
	a.la.Record(audit.FromDenial(d.Denial, a.container, ""))
}

// close sends what is queued (up to a second).
func (a *runAuditTrail) close() {
	a.la.Close(time.Second)
}
