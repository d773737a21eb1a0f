// Package layering holds the layering test: it reads the table of allowed
// edges between folders from docs/design.md ("Layering") and checks the
// module's non-test imports (go list -deps) against it, and the table
// against the rules every version of it must keep (policy/ imports only
// the standard library, only bpf/ and enforcer/ import cilium/ebpf among
// product packages, oci/ and policy/ import nothing under daemon/, only
// cmd/ and tools/ import tools/, no product package imports a harness, no
// cycle between folders). The package has no code besides its tests.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package layering
