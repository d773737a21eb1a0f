package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/vmtest"
)

// TestAttachSetDetachIsVerified: detach leaves no link of enforcerd's
// programs in the kernel (the kernel's own link list says so), attach puts
// every one back, and a link some other holder keeps open makes detach fail
// instead of letting (a) run with programs attached.
func TestAttachSetDetachIsVerified(t *testing.T) {
	vmtest.RequireRoot(t)
	if vmtest.InVM() {
		t.Log("native test: the attach set's link bookkeeping does not depend on the program type")
		return
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skipf("no cgroup2: %v", err)
	}
	base, err := cgroup.Create(mount, fmt.Sprintf("/enforcerd-attachset-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = base.Remove(5 * time.Second) }()
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-attachset-test-%d", os.Getpid())
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: base.Path()})
	if err != nil {
		vmtest.Skip(t, fmt.Sprintf("cannot load programs here: %v", err))
	}
	defer os.RemoveAll(pin)
	if err := enf.LayerError(enforcer.LayerCgroup); err != nil {
		enf.Close()
		vmtest.Skip(t, fmt.Sprintf("cgroup-BPF programs cannot attach here: %v", err))
	}
	set, err := captureAttachments(pin, base.Path())
	if err != nil {
		enf.Close()
		t.Fatal(err)
	}
	defer set.close()
	if len(set.items) == 0 {
		enf.Close()
		t.Fatal("no attachment captured")
	}
	count := func() int {
		t.Helper()
		n, err := set.attachedLinks()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != len(set.items) {
		t.Errorf("loaded: %d links of ours in the kernel, want %d", n, len(set.items))
	}
	enf.Close()
	if err := set.detach(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("detached: %d links of ours still in the kernel", n)
	}
	if err := set.attach(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != len(set.items) {
		t.Errorf("re-attached: %d links of ours in the kernel, want %d", n, len(set.items))
	}

	// Another holder: detach must refuse to report "detached".
	held, err := link.LoadPinnedLink(set.items[0].pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := detachTimeout
	detachTimeout = 200 * time.Millisecond
	err = set.detach()
	detachTimeout = old
	if err == nil {
		t.Error("detach succeeded while a link was held open elsewhere")
	}
	held.Close()
	for i := 0; i < 100 && count() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n != 0 {
		t.Errorf("after the holder closed: %d links of ours still in the kernel", n)
	}
}
