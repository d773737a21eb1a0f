package bpf

// The last go:generate step (go generate takes a package's files in name
// order, so this runs after gen.go's bpf2go lines): record in objects.sum
// what the objects were just generated from. objects_test.go checks the
// record; see tools/bpfsum.
//go:generate go run github.com/enforcerd/enforcerd/cmd/bpfsum write
