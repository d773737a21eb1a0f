package audit

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/denial"
)

// TestFingerprintByReference: denial and summary records carry the id of
// the fingerprint, the registration record its text and the same id; other
// daemon records the id only. The id is stable: 16 hex digits of SHA-256.
func TestFingerprintByReference(t *testing.T) {
	const fp = "v1;posture=general;deny=network,write;allow=none;"
	id := FingerprintID(fp)
	if id != FingerprintID(fp) || len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("FingerprintID = %q", id)
	}
	// sha256("abc") = ba7816bf8f01cfea...
	if FingerprintID("abc") != "ba7816bf8f01cfea" || FingerprintID("") != "" {
		t.Fatalf("FingerprintID(abc) = %q, (\"\") = %q", FingerprintID("abc"), FingerprintID(""))
	}
	t0 := time.Unix(1, 0)
	reg := Event(t0, "c1", 6, "/sys/fs/cgroup/c1", "registered", "", fp)
	nar := Event(t0, "c1", 6, "/sys/fs/cgroup/c1", "narrowed", "", fp)
	act := Event(t0, "c1", 6, "/sys/fs/cgroup/c1", "activated_at_exec", "", fp)
	d := FromDenial(denial.Denial{Hook: denial.HookFileOpen}, "c1", fp)
	s := FromSummary(denial.Summary{Hook: denial.HookFileOpen, Count: 1}, "c1", fp, "")
	for _, r := range []Record{reg, nar} {
		if r.Fingerprint != fp || r.FingerprintID != id {
			t.Errorf("%s record: fingerprint %q id %q", r.Decision, r.Fingerprint, r.FingerprintID)
		}
	}
	for _, r := range []Record{act, d, s} {
		b, _ := json.Marshal(r)
		if r.FingerprintID != id || strings.Contains(string(b), `"fingerprint"`) {
			t.Errorf("%s record carries %s", r.Type, b)
		}
	}
}

func fieldsJSON(t *testing.T, h denial.Hook, r denial.Rule, o denial.Object) map[string]any {
	t.Helper()
	b, err := json.Marshal(objectFields(h, r, o))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestObjectFields: the structured object of each kind has exactly the
// fields the record carries; 0 is kept where it is a value (a port, a
// protocol, a capability, a bpf command, an IPC id).
func TestObjectFields(t *testing.T) {
	cases := []struct {
		name string
		hook denial.Hook
		rule denial.Rule
		obj  denial.Object
		want string
	}{
		{"file", denial.HookFileOpen, denial.RuleWrite,
			denial.Object{Kind: denial.ObjectFile, Path: "/etc/passwd", Dev: 8<<20 | 1, Ino: 99, Mode: 0o100644},
			`{"dev":"8:1","ino":99,"kind":"file","mode":33188,"path":"/etc/passwd"}`},
		{"file not yet created", denial.HookInodeCreate, denial.RuleWrite,
			denial.Object{Kind: denial.ObjectFile, Path: ".../a/new"},
			`{"kind":"file","path":".../a/new"}`},
		{"socket to port 0", denial.HookSocketConnect, denial.RuleNetwork,
			denial.Object{Kind: denial.ObjectSocket, Family: 2, SockType: 2, Protocol: 17, Addr: netip.MustParseAddr("10.0.0.1"), Port: 0},
			`{"address":"10.0.0.1","family":"AF_INET","kind":"socket","port":0,"protocol":17,"sock_type":"SOCK_DGRAM"}`},
		{"socket without destination", denial.HookSocketCreate, denial.RuleNetwork,
			denial.Object{Kind: denial.ObjectSocket, Family: 10, SockType: 1},
			`{"family":"AF_INET6","kind":"socket","protocol":0,"sock_type":"SOCK_STREAM"}`},
		{"unix peer outside", denial.HookUnixStreamConnect, denial.RuleNetwork,
			denial.Object{Kind: denial.ObjectSocket, Family: 1, SockType: 1, Ino: 4242},
			`{"family":"AF_UNIX","ino":4242,"kind":"socket","protocol":0,"sock_type":"SOCK_STREAM"}`},
		{"unnamed family", denial.HookSocketCreate, denial.RuleNetwork,
			denial.Object{Kind: denial.ObjectSocket, Family: 99, SockType: 77},
			`{"family":"99","kind":"socket","protocol":0,"sock_type":"77"}`},
		{"task", denial.HookTaskKill, denial.RuleSignalOutside,
			denial.Object{Kind: denial.ObjectTask, ID: 1},
			`{"kind":"task","target_pid":1}`},
		{"process group owner", denial.HookFileFcntl, denial.RuleSigioOwner,
			denial.Object{Kind: denial.ObjectTask, ID: uint64(^uint64(0) - 6)}, // -7
			`{"kind":"task","target_pid":-7}`},
		{"cgroup", denial.HookInodePermission, denial.RuleCgroupOutside,
			denial.Object{Kind: denial.ObjectCgroup, ID: 1 << 40},
			`{"kind":"cgroup","target_cgroup_id":1099511627776}`},
		{"bpf command 0", denial.HookBPF, denial.RuleBPFSyscall,
			denial.Object{Kind: denial.ObjectBPFCmd, ID: 0},
			`{"bpf_cmd":0,"kind":"bpf_cmd"}`},
		{"capability 0", denial.HookCapable, denial.RuleCapability,
			denial.Object{Kind: denial.ObjectCap, ID: 0},
			`{"capability":0,"kind":"capability"}`},
		{"capability named", denial.HookCapable, denial.RuleCapability,
			denial.Object{Kind: denial.ObjectCap, ID: 21},
			`{"capability":21,"capability_name":"CAP_SYS_ADMIN","kind":"capability"}`},
		{"filesystem", denial.HookInodePermission, denial.RuleKernelSetting,
			denial.Object{Kind: denial.ObjectFS, ID: 0x62656572},
			`{"filesystem":"sysfs","fs_magic":"0x62656572","kind":"filesystem"}`},
		{"mount", denial.HookSbMount, denial.RuleMount, denial.Object{Kind: denial.ObjectMount}, `{"kind":"mount"}`},
		{"tty ioctl", denial.HookFileIoctl, denial.RuleTTYInject,
			denial.Object{Kind: denial.ObjectNone, ID: 0x5412},
			`{"ioctl_cmd":"0x5412","kind":"none"}`},
		{"ipc id 0", denial.HookIPCPermission, denial.RuleIPCOutside,
			denial.Object{Kind: denial.ObjectNone, ID: 0},
			`{"ipc_id":0,"kind":"none"}`},
		{"key", denial.HookKeyPermission, denial.RuleKeyOutside,
			denial.Object{Kind: denial.ObjectNone, ID: 123456},
			`{"key_serial":123456,"kind":"none"}`},
		{"rlimit", denial.HookTaskSetrlimit, denial.RuleCoreDumpLimit,
			denial.Object{Kind: denial.ObjectNone, ID: 4},
			`{"kind":"none","rlimit_resource":4}`},
		{"nothing recorded", denial.HookUringCmd, denial.RuleURingCmd,
			denial.Object{Kind: denial.ObjectNone}, `{"kind":"none"}`},
		{"module", denial.HookKernelModuleRequest, denial.RuleKernelModule,
			denial.Object{Kind: denial.ObjectFile, Path: ".../crypto-foo"},
			`{"kind":"file","module":"crypto-foo"}`},
	}
	for _, c := range cases {
		// Keys sorted (a map marshals so), numbers exact below 2^53.
		b, err := json.Marshal(fieldsJSON(t, c.hook, c.rule, c.obj))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s: %s\n want %s", c.name, b, c.want)
		}
	}
	// In a record, next to the display string; absent for overflow
	// summaries, which have no object.
	r := FromDenial(denial.Denial{Hook: denial.HookSocketConnect, Rule: denial.RuleNetwork, Errno: syscall.EPERM,
		Object: cases[2].obj}, "", "")
	if r.ObjectFields == nil || r.ObjectFields.Port == nil || *r.ObjectFields.Port != 0 || r.Object != "AF_INET SOCK_DGRAM 10.0.0.1:0" || r.Rule != "network" {
		t.Fatalf("record %+v", r)
	}
	if s := FromSummary(denial.Summary{Overflow: true, Count: 2}, "", "", ""); s.ObjectFields != nil {
		t.Fatalf("overflow summary has object fields %+v", s.ObjectFields)
	}
	if s := FromSummary(denial.Summary{Hook: denial.HookFileOpen, Object: denial.Object{Kind: denial.ObjectFile, Dev: 1, Ino: 2}, Count: 2}, "", "", "/x"); s.ObjectFields == nil || s.ObjectFields.Path != "/x" || s.ObjectFields.Ino != 2 {
		t.Fatalf("summary object fields %+v", s.ObjectFields)
	}
}

// TestProcOf: ppid and exe come from /proc/<tgid> when the thread still
// has the record's comm; otherwise (gone, exec'd, pid reused) they are
// absent rather than another process's.
func TestProcOf(t *testing.T) {
	root := t.TempDir()
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })
	mk := func(tgid, tid, stat, exe string) {
		dir := filepath.Join(root, tgid, "task", tid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if exe != "" {
			if err := os.Symlink(exe, filepath.Join(root, tgid, "exe")); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("42", "43", "43 (a) b) c) S 7 42 42 0 -1 4194560 ...", "/usr/bin/curl")
	ppid, exe := procOf(42, 43, "a) b) c")
	if ppid == nil || *ppid != 7 || exe != "/usr/bin/curl" {
		t.Fatalf("procOf = %v %q", ppid, exe)
	}
	if ppid, exe := procOf(42, 43, "other"); ppid != nil || exe != "" {
		t.Fatalf("comm changed: procOf = %v %q, want nothing", ppid, exe)
	}
	if ppid, exe := procOf(44, 44, "a"); ppid != nil || exe != "" {
		t.Fatalf("gone: procOf = %v %q, want nothing", ppid, exe)
	}
	if ppid, exe := procOf(0, 0, ""); ppid != nil || exe != "" {
		t.Fatalf("summary: procOf = %v %q, want nothing", ppid, exe)
	}
	mk("50", "50", "50 (x) S", "")
	if ppid, _ := procOf(50, 50, "x"); ppid != nil {
		t.Fatalf("short stat: ppid %v", *ppid)
	}
	// The live process: this test's own.
	self := uint32(os.Getpid())
	procRoot = "/proc"
	comm, _ := os.ReadFile("/proc/self/comm")
	if ppid, exe := procOf(self, self, strings.TrimSpace(string(comm))); ppid == nil || *ppid != uint32(os.Getppid()) || exe == "" {
		t.Fatalf("self: procOf = %v %q", ppid, exe)
	}
}
