// Package sample is the test binary whose -test.v=test2json output the
// verdict package's recorded samples (../*.console) were made from; see
// TestRecordSamples. VERDICT_SAMPLE picks the behaviour: pass, fail, skip,
// panic or timeout.
package sample

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func mode() string { return os.Getenv("VERDICT_SAMPLE") }

func TestPasses(t *testing.T) { t.Log("a log line") }

func TestSubtests(t *testing.T) {
	t.Run("first", func(t *testing.T) {})
	t.Run("second", func(t *testing.T) {
		switch mode() {
		case "fail":
			t.Fatal("deliberate failure")
		case "panic":
			panic("deliberate panic")
		}
	})
}

// TestLooksLikeAResult prints what the unframed -test.v output of a result
// looks like, and output without a final newline: neither may be counted.
func TestLooksLikeAResult(t *testing.T) {
	fmt.Println("--- FAIL: TestNotReally (0.00s)")
	fmt.Print("no newline at the end")
}

func TestMaySkip(t *testing.T) {
	if mode() == "skip" {
		t.Skip("deliberate skip")
	}
}

func TestMayHang(t *testing.T) {
	if mode() == "timeout" {
		time.Sleep(time.Minute)
	}
}

func TestNoBPFLSMRefuses(t *testing.T) {}
