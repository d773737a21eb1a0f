package run

import (
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/policy"
)

// TestCheckRunAnswer: run accepts a daemon's answer that is as narrow as
// it asked or narrower, and refuses one wider in any field or with an exec
// allow list naming a file it did not ask for.
func TestCheckRunAnswer(t *testing.T) {
	want := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellNone}
	asked := []string{"/usr/bin/python3", "/bin/true"}
	for _, c := range []struct {
		name string
		got  api.Container
		err  string
	}{
		{"same", api.Container{Kernel: want, ExecAllow: asked}, ""},
		{"narrower, fewer files", api.Container{Kernel: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellNone}, ExecAllow: []string{"/bin/true"}}, ""},
		{"network wider", api.Container{Kernel: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}}, "kernel ceiling"},
		{"shell wider", api.Container{Kernel: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}}, "kernel ceiling"},
		{"extra file", api.Container{Kernel: want, ExecAllow: []string{"/bin/true", "/bin/sh"}}, "names /bin/sh"},
		{"unclean path of an asked file", api.Container{Kernel: want, ExecAllow: []string{"/bin/./true"}}, ""},
	} {
		err := checkRunAnswer(c.got, want, asked)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}
