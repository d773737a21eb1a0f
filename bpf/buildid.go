package bpf

import (
	"crypto/sha256"
	"embed"
	"io/fs"
	"sort"
)

//go:embed *_bpfel.o
var objectFiles embed.FS

// BuildID identifies this build's eBPF objects: SHA-256 over the names and
// bytes of every embedded *_bpfel.o, in name order. enforcer pins it next to
// the links, so a newer enforcerd recognises programs pinned by another build
// and replaces them (see enforcer.Open).
func BuildID() [32]byte {
	names, err := fs.Glob(objectFiles, "*_bpfel.o")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := objectFiles.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
	}
	var id [32]byte
	copy(id[:], h.Sum(nil))
	return id
}
