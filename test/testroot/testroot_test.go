package testroot

import (
	"os"
	"strings"
	"testing"
)

func TestReason(t *testing.T) {
	got := Reason("loads BPF programs")
	if os.Geteuid() == 0 {
		if got != "" {
			t.Fatalf("as root: Reason = %q, want \"\"", got)
		}
		return
	}
	if !strings.HasPrefix(got, "needs root (running as uid ") || !strings.HasSuffix(got, "): loads BPF programs") {
		t.Fatalf("Reason = %q", got)
	}
}
