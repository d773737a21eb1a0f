// Package testroot lets a test that needs root say so in one line.
//
// make unit runs as any user: a test that needs uid 0 (BPF maps and
// programs, cgroups, a peer the daemon's root-only API serves, a child of
// another uid) calls Require first and is skipped with one line naming the
// uid and the reason, instead of failing (or panicking and hiding its whole
// package) as a non-root user. As root nothing is skipped. Kernel tests use
// vmtest.RequireRoot, which fails instead inside the VM.
//
// It imports only the standard library and is imported only by tests.
package testroot

import (
	"fmt"
	"os"
	"testing"
)

// Reason is the skip line for a test that needs root because of why, or ""
// when the process runs as uid 0: "needs root (running as uid 1000): why".
func Reason(why string) string {
	euid := os.Geteuid()
	if euid == 0 {
		return ""
	}
	r := fmt.Sprintf("needs root (running as uid %d)", euid)
	if why != "" {
		r += ": " + why
	}
	return r
}

// Require skips t unless the process runs as uid 0; why names what needs
// root.
func Require(t testing.TB, why string) {
	t.Helper()
	if r := Reason(why); r != "" {
		t.Skip(r)
	}
}
