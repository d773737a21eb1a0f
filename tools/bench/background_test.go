package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestNativeBackgroundLivesAndStops: the background sandbox's process runs
// in its own cgroup and makes its calls (the first at once); stop finds
// them, kills it and removes the cgroup. A nil background does nothing.
func TestNativeBackgroundLivesAndStops(t *testing.T) {
	vmtest.NativeOnly(t)
	vmtest.RequireRoot(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the idler is written for amd64 only")
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skipf("no cgroup2: %v", err)
	}
	base := fmt.Sprintf("/enforcerd-bg-test-%d", os.Getpid())
	parent, err := cgroup.Create(mount, base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Remove(5 * time.Second) }()
	bg, err := startBackground(mount, base+"/bg", t.TempDir(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := bg.cg.Procs()
	if err != nil || len(procs) != 1 {
		t.Errorf("background cgroup holds %v (%v), want one process", procs, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if calls, _, _ := bg.pool.counts(); calls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background process made no call in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := bg.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bg.cg.Path()); !os.IsNotExist(err) {
		t.Errorf("background cgroup still there after stop: %v", err)
	}
	var none *background
	if err := errorsOf(none.register(nil), none.unregister(nil), none.stop()); err != nil {
		t.Errorf("nil background: %v", err)
	}
}

func errorsOf(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// TestMarkdownNamesBackground: a part's line says what ran beside the
// phases, and the method text says what the background sandbox is.
func TestMarkdownNamesBackground(t *testing.T) {
	d := hostDoc(3)
	d.Background = backgroundNote()
	var buf bytes.Buffer
	Markdown(&buf, []*Doc{d}, "make bench", "test host", 1)
	out := buf.String()
	for _, s := range []string{
		". Background: one other sandbox on the guest during the rounds",
		"so (b), (c), (c2) and (d) are measured with one (c2) sandbox registered elsewhere on the host",
		"in (f) there is nothing of enforcerd's to register it with",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
}
