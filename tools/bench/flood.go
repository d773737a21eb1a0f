package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// floodSockets are the socket() calls of the flood ({family, type}), each a
// distinct denial under network=false; the flood's files follow them.
var floodSockets = [][2]int{
	{unix.AF_INET, unix.SOCK_STREAM}, {unix.AF_INET, unix.SOCK_DGRAM},
	{unix.AF_INET6, unix.SOCK_STREAM}, {unix.AF_INET6, unix.SOCK_DGRAM},
}

// floodFiles is how many files the flood opens for writing.
const floodFiles = 3

// denyNetWrite is the flood's ceiling: sockets and writes denied.
var denyNetWrite = entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}}

// flood: a child makes n denied operations, FloodOps' sockets and opens of
// floodFiles files in turn (len(floodSockets)+floodFiles distinct denials),
// while a reader drains the ring buffer; then the kernel's tally is rotated.
// Every call must be denied; every distinct denial must have its first
// record and a summary with its exact count (flood_distinct_missing 0), and
// the counts must add up to the denials (flood_counted_exact 1).
func (r *run) flood(enf *enforcer.Enforcer, cg cgroup.Cgroup, n uint64) error {
	r.log("audit flood: %d denied operations", n)
	dir := filepath.Join(r.root, "flood-files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var paths []string
	inos := map[uint64]int{} // inode -> index in DeniedBy
	for i := 0; i < floodFiles; i++ {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return err
		}
		paths = append(paths, p)
		inos[st.Ino] = len(floodSockets) + i
	}
	tally, err := enf.Tally()
	if err != nil {
		return err
	}
	rd, err := enf.NewReader()
	if err != nil {
		return err
	}
	defer rd.Close()
	// Drop what earlier phases counted and left in the ring.
	if err := tally.Rotate(); err != nil {
		return err
	}
	if _, err := drain(rd, 0); err != nil {
		return err
	}
	tally.Collect()
	lost0, err := enf.LostRecords()
	if err != nil {
		return err
	}
	unattr0, err := enf.UnattributedDenials()
	if err != nil {
		return err
	}
	w, err := startWorker(cg, r.args("flood", "-mode", "flood", "-n", strconv.FormatUint(n, 10), "-files", strings.Join(paths, ","))...)
	if err != nil {
		return err
	}
	if err := enf.Register(cg, denyNetWrite); err != nil {
		return err
	}
	defer func() { _ = enf.Unregister(cg.ID) }()
	got := make(chan []denial.Denial)
	go func() {
		ds, _ := drain(rd, cg.ID)
		got <- ds
	}()
	if err := w.start(); err != nil {
		return err
	}
	res, err := w.result()
	if err != nil {
		return err
	}
	if err := tally.Rotate(); err != nil {
		return err
	}
	_ = rd.Flush()
	read := <-got
	sums := tally.Collect()
	lost1, err := enf.LostRecords()
	if err != nil {
		return err
	}
	unattr1, err := enf.UnattributedDenials()
	if err != nil {
		return err
	}
	// Match records and summaries to the flood's operations.
	which := func(o denial.Object) int {
		if o.Kind == denial.ObjectFile {
			if i, ok := inos[o.Ino]; ok {
				return i
			}
			return -1
		}
		for i, s := range floodSockets {
			if o.Kind == denial.ObjectSocket && int(o.Family) == s[0] && int(o.SockType&0xf) == s[1] {
				return i
			}
		}
		return -1
	}
	first := make([]bool, len(res.DeniedBy))
	for _, d := range read {
		if i := which(d.Object); i >= 0 {
			first[i] = true
		}
	}
	counted := make([]uint64, len(res.DeniedBy))
	var total, other uint64
	for _, s := range sums {
		if s.CeilingCgroupID != cg.ID {
			continue
		}
		total += s.Count
		if i := which(s.Object); i >= 0 && !s.Overflow {
			counted[i] += s.Count
		} else {
			other += s.Count
		}
	}
	missing := 0
	for i := range res.DeniedBy {
		if !first[i] || counted[i] != res.DeniedBy[i] {
			missing++
			r.log("flood: distinct denial %d: first record %v, counted %d of %d", i, first[i], counted[i], res.DeniedBy[i])
		}
	}
	intact, exact := 0.0, 0.0
	if res.Denied == n && res.Allowed == 0 && res.Other == 0 {
		intact = 1
	}
	if total == res.Denied && unattr1 == unattr0 {
		exact = 1
	}
	r.doc.Values = append(r.doc.Values,
		Value{"flood_denials_per_s", float64(res.Denied) / (res.ElapsedNs / 1e9), "/s"},
		Value{"flood_every_op_denied", intact, "(1=yes)"},
		Value{"flood_distinct", float64(len(res.DeniedBy)), "denials"},
		Value{"flood_distinct_missing", float64(missing), "denials"},
		Value{"flood_counted_exact", exact, "(1=yes)"},
		Value{"flood_counted_total", float64(total), "denials"},
		Value{"flood_records_read", float64(len(read)), "records"},
		Value{"flood_records_lost", float64(lost1 - lost0), "records"})
	r.log("flood: %d denied, %d allowed, %d other in %.1fs; %d records read, %d lost; %d counted in %d summaries (%d outside the flood's operations), %d distinct missing",
		res.Denied, res.Allowed, res.Other, res.ElapsedNs/1e9, len(read), lost1-lost0, total, len(sums), other, missing)
	if intact != 1 {
		return fmt.Errorf("audit flood: enforcement not intact: %d allowed, %d other errors of %d", res.Allowed, res.Other, n)
	}
	return nil
}

// floodOnly loads enforcerd and runs only the flood (-flood-only).
func (r *run) floodOnly(pin, mount string, cg cgroup.Cgroup, n uint64, t0 time.Time) error {
	r.log("loading enforcerd (loader child)")
	if err := r.load(pin, mount, true); err != nil {
		return err
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount})
	if err != nil {
		return err
	}
	defer enf.Close()
	if err := enf.LayerError(coverage.LayerLSM); err != nil {
		return fmt.Errorf("BPF LSM layer not in force: %w", err)
	}
	if err := r.flood(enf, cg, n); err != nil {
		return err
	}
	r.doc.ElapsedS = time.Since(t0).Seconds()
	return Emit(os.Stdout, r.doc)
}

// drain reads records until ErrFlushed (after a Flush: at once when cg is
// 0, else by the caller) and returns those of ceiling cgroup cg.
func drain(rd *enforcer.Reader, cg uint64) ([]denial.Denial, error) {
	if cg == 0 {
		_ = rd.Flush()
	}
	var out []denial.Denial
	for {
		d, err := rd.Read()
		if errors.Is(err, enforcer.ErrFlushed) {
			return out, nil
		}
		if errors.Is(err, enforcer.ErrClosed) {
			return out, err
		}
		if err == nil && cg != 0 && d.CeilingCgroupID == cg {
			out = append(out, d)
		}
	}
}
