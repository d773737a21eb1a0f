// Package selftest holds deliberately failing guest tests for
// `scripts/vmtest --selftest`: the harness must exit non-zero when a guest
// test fails or skips. It only runs when the selftest guest sets
// ENFORCERD_VMTEST_SELFTEST=1, so a stray `go test` here passes.
package selftest

import (
	"os"
	"testing"
)

func armed(t *testing.T) {
	if os.Getenv("ENFORCERD_VMTEST_SELFTEST") != "1" {
		t.Log("not in the vmtest selftest guest; nothing to do")
		t.SkipNow()
	}
}

func TestSelftestPasses(t *testing.T) {
	armed(t)
}

func TestSelftestMustFail(t *testing.T) {
	armed(t)
	t.Fatal("deliberate failure: scripts/vmtest must report this and exit non-zero")
}

func TestSelftestMustNotSkip(t *testing.T) {
	armed(t)
	t.Skip("deliberate skip: scripts/vmtest must treat a skip in the VM as a failure")
}
