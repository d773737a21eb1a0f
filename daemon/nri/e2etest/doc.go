// Package e2etest holds the end-to-end test of the NRI plugin
// (daemon/nri) with a real container runtime: `enforcerd daemon` with
// nri.enable, containerd 2.4 with NRI and its default validator, pods run
// through crictl. It runs only inside the scripts/vmtest guest, which gets
// the runtime on its /cri disk (testdata/needs-cri; scripts/setup-cri
// builds it). The package has no code besides its tests.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package e2etest
