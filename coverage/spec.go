package coverage

import (
	"fmt"
	"strings"
)

// SpecLayer is what an OCI container's runtime spec (its bundle's
// config.json) enforces by itself, as oci/speccheck judged it: on a host
// without BPF LSM the kernel programs cannot enforce write=false at all,
// nor network=false beyond inet sockets, but a read-only container, or one
// in its own network namespace whose seccomp filter denies every socket
// family but AF_UNIX, does. Of credits it as MechContainerSpec.
// The OCI hook and the NRI plugin set it (docs/no-bpf-lsm.md
// "Containers"); only the coverage rule reads it. A field the spec layer does not
// give is covered as for an entry without one (for network=false the
// cgroup-BPF layer's partial coverage), its gap detail naming the rules
// the spec misses.
type SpecLayer struct {
	// Write: the spec gives every write=false rule (root and mounts
	// read-only, no CAP_SYS_ADMIN, a device cgroup for harmless
	// character devices only).
	Write bool `json:"write"`
	// Network: the spec gives every network=false rule (a new network
	// namespace, seccomp denying socket/socketpair but AF_UNIX and
	// io_uring_setup on the native ABI only, no CAP_SYS_ADMIN, no host
	// socket directory bound in).
	Network bool `json:"network"`
	// WriteMissing, NetworkMissing: what the spec lacks for the field
	// (for the gap's detail); "" when credited.
	WriteMissing   string `json:"write_missing,omitempty"`
	NetworkMissing string `json:"network_missing,omitempty"`
	// WritableMounts: destinations of read-write mounts the write credit
	// allows because they are at or beneath a writable root. The caller
	// must hold them to the registration's roots (the daemon refuses
	// otherwise); shell=read_only is not credited when there are any.
	WritableMounts []string `json:"writable_mounts,omitempty"`
}

// specMissing is a gap detail's note on why the container's spec does
// not cover a field ("" without a spec layer).
func specMissing(s *SpecLayer, missing string) string {
	if s == nil {
		return ""
	}
	if missing == "" {
		missing = "not checked"
	}
	return "; the container's spec does not cover it either: " + missing
}

// coverSpecNetwork credits network=false to the spec layer (with the
// cgroup-BPF programs when attached): partial, GapNetworkUnix.
func coverSpecNetwork(cov *Coverage, cgErr, lsmErr error) {
	m := []string{MechContainerSpec}
	if cgErr == nil {
		m = append(m, MechCgroupBPF)
	}
	cov.Mechanisms["network"] = m
	cov.Partial = append(cov.Partial, Gap{Code: GapNetworkUnix, Field: "network", Detail: fmt.Sprintf(
		"the container's spec denies every socket family but AF_UNIX (seccomp, io_uring_setup too) in a network namespace of its own; pathname unix sockets in bind-mounted host directories other than the refused ones still reach peers outside, and sockets inherited or passed in work: that needs BPF LSM (%v)", lsmErr)})
}

// coverSpecWrite credits write=false to the spec layer: partial,
// GapWriteInheritedFDs (read-only mounts stop opens, not descriptors the
// runtime hands the container).
func coverSpecWrite(cov *Coverage, s *SpecLayer, lsmErr error) {
	cov.Mechanisms["write"] = []string{MechContainerSpec}
	roots := ""
	if len(s.WritableMounts) > 0 {
		roots = fmt.Sprintf(" (read-write mounts in writable roots: %s)", strings.Join(s.WritableMounts, ", "))
	}
	cov.Partial = append(cov.Partial, Gap{Code: GapWriteInheritedFDs, Field: "write", Detail: fmt.Sprintf(
		"the container's spec makes its root and every mount read-only%s; descriptors of writable files the runtime hands the container (its stdio, preserved descriptors) stay writable, and so does a file system mounted beneath root.path before the runtime starts: BPF LSM checks every write (%v)", roots, lsmErr)})
}

func (s *SpecLayer) writeMissing() string {
	if s == nil {
		return ""
	}
	return s.WriteMissing
}

func (s *SpecLayer) networkMissing() string {
	if s == nil {
		return ""
	}
	return s.NetworkMissing
}
