package bpf_test

import (
	"testing"

	"github.com/enforcerd/enforcerd/tools/bpfsum"
)

// TestObjectsMatchSources: the committed *_bpfel.o and *_bpfel.go are the
// ones `make generate` produced from the bpf/*.c and *.h (headers/vmlinux.h
// included), go:generate flags and bpf2go version in this tree; objects.sum
// records them (tools/bpfsum). Refresh with `make generate`.
func TestObjectsMatchSources(t *testing.T) {
	if err := bpfsum.Check("."); err != nil {
		t.Fatal(err)
	}
}
