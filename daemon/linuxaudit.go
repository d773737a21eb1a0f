package daemon

import (
	"fmt"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

// linuxAuditSender is what openLinuxAudit leaves for startLinuxAudit: how
// to send a user message, and whether its failure was already reported.
type linuxAuditSender struct {
	send     func(typ uint16, text string) error
	reported bool
}

// openLinuxAudit is the claim step of audit.linux_audit: it opens the
// NETLINK_AUDIT socket and asks the kernel, without writing a record,
// whether it takes user messages from this process (AuditNetlink.Probe).
// When it would not: with linux_audit_required the start is refused
// (before any kernel state changes); otherwise it is logged once, and
// every record is later counted as failed (a send to a socket that could
// not be opened fails with the same error).
func (n *node) openLinuxAudit() error {
	if !n.cfg.Audit.LinuxAudit {
		return nil
	}
	nl, err := audit.DialAuditNetlink()
	if err == nil {
		n.atStop(func() { nl.Close() })
		n.linuxAudit = &linuxAuditSender{send: nl.SendUser}
		err = nl.Probe()
	} else {
		dialErr := err
		n.linuxAudit = &linuxAuditSender{send: func(uint16, string) error { return dialErr }}
	}
	if err == nil {
		n.log.Info("linux audit trail: denials are sent as AUDIT_USER_AVC", "rate_per_second", n.cfg.Audit.LinuxAuditRatePerSecond)
		return nil
	}
	if n.cfg.Audit.LinuxAuditRequired {
		return fmt.Errorf("audit.linux_audit_required: the kernel does not take audit messages from enforcerd (CAP_AUDIT_WRITE in the initial user namespace is needed): %w", err)
	}
	n.linuxAudit.reported = true
	n.log.Warn("linux audit trail unavailable: denials are not sent to it; the audit log and the journal have them; each record is counted in enforcerd_linux_audit_records_total{result=\"failed\"}", "err", err)
	return nil
}

// startLinuxAudit starts the sender of the pump's records to the audit
// trail (nil without audit.linux_audit), counting each record's outcome in
// the metrics and logging the first failure unless the start already did.
// Stop waits up to a second for the queued records.
func (n *node) startLinuxAudit() *audit.LinuxAudit {
	if n.linuxAudit == nil {
		return nil
	}
	failed := func(err error) {
		n.log.Warn("linux audit trail: a record could not be sent; further failures are counted in enforcerd_linux_audit_records_total{result=\"failed\"}, not logged", "err", err)
	}
	if n.linuxAudit.reported {
		failed = nil
	}
	la := audit.NewLinuxAudit(n.linuxAudit.send, n.cfg.Audit.LinuxAuditRatePerSecond,
		func(result string) { n.m.LinuxAudit.WithLabelValues(result).Inc() }, failed)
	n.atStop(func() { la.Close(time.Second) })
	return la
}
