package bpf_test

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
)

// enumOf returns the enum named name from the BTF of bpf/shared.bpf.c: what
// the compiled programs use, not what a header says.
func enumOf(t *testing.T, name string) *btf.Enum {
	t.Helper()
	spec, err := bpf.LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	var e *btf.Enum
	if err := spec.Types.TypeByName(name, &e); err != nil {
		t.Fatalf("enum %s not in the BTF of shared.bpf.c: %v", name, err)
	}
	return e
}

// TestHookTableMatchesBPFEnum: every value of enum hook_id that the
// objects carry has an entry in enforcer's hook table, with the kernel's
// hook name, and the table has no other: a record's hook id can never be
// misnamed.
func TestHookTableMatchesBPFEnum(t *testing.T) {
	e := enumOf(t, "hook_id")
	if len(e.Values) != len(denial.AllHooks) {
		t.Fatalf("enum hook_id has %d values, denial.AllHooks %d", len(e.Values), len(denial.AllHooks))
	}
	// Every id is the LSM hook (or cgroup attach point) of the same name,
	// but the legacy ids programs before audit schema 3 recorded for one
	// protection at several hooks: they read as the hook that most often
	// produced them, and no program records them any more.
	aliases := map[string]string{
		"TTY_IOCTL": "file_ioctl", "BPFFS_UNLINK": "inode_unlink", "KERNEL_SETTING": "inode_permission",
		"PROC_WRITE": "inode_permission", "KMSG_WRITE": "file_permission",
	}
	var top uint64
	for _, v := range e.Values {
		n := strings.TrimPrefix(v.Name, "HOOK_")
		h := denial.Hook(v.Value)
		if uint64(h) != v.Value {
			t.Fatalf("HOOK_%s = %d does not fit denial.Hook", n, v.Value)
		}
		top = max(top, v.Value)
		want := strings.ToLower(n)
		if strings.HasPrefix(n, "CGROUP_") {
			want = "cgroup/" + strings.ToLower(strings.TrimPrefix(n, "CGROUP_"))
		}
		if a, ok := aliases[n]; ok {
			want = a
			if !h.Legacy() {
				t.Errorf("HOOK_%s is not marked legacy", n)
			}
		} else if h.Legacy() {
			t.Errorf("HOOK_%s is marked legacy", n)
		}
		if h.String() != want {
			t.Errorf("hook %d: HOOK_%s is named %q in Go, want %q", h, n, h.String(), want)
		}
		if h.Operation() == "unknown" {
			t.Errorf("hook %d (HOOK_%s) has no operation", h, n)
		}
	}
	if next := denial.Hook(top + 1); !strings.HasPrefix(next.String(), "hook(") {
		t.Fatalf("enforcer names hook %d (%s), which enum hook_id does not have", next, next)
	}
}

// TestRecordEnumsAreUnique: the values Go decodes records with are
// distinct within each enum (a copy-paste of a value would make two
// kinds, bits or decisions indistinguishable).
func TestRecordEnumsAreUnique(t *testing.T) {
	for _, name := range []string{"hook_id", "object_kind", "decision", "deny_bit", "ceiling_flag", "fs_magic"} {
		seen := map[uint64]string{}
		for _, v := range enumOf(t, name).Values {
			if o, dup := seen[v.Value]; dup {
				t.Errorf("enum %s: %s and %s are both %d", name, o, v.Name, v.Value)
			}
			seen[v.Value] = v.Name
		}
	}
}

// TestProgramSectionsMatchSpecs: the cheap listing of an object's programs
// (ProgramSections) names exactly the programs, and sections, that the
// full parse (Load<Stem>) finds.
func TestProgramSectionsMatchSpecs(t *testing.T) {
	for stem, load := range map[string]func() (*ebpf.CollectionSpec, error){
		"network": bpf.LoadNetwork, "file": bpf.LoadFile, "exec": bpf.LoadExec, "tamper": bpf.LoadTamper,
		"ipc": bpf.LoadIpc, "sock": bpf.LoadSock, "lifecycle": bpf.LoadLifecycle, "shared": bpf.LoadShared,
	} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		secs, err := bpf.ProgramSections(stem)
		if err != nil {
			t.Fatal(err)
		}
		if len(secs) != len(spec.Programs) {
			t.Errorf("%s: ProgramSections lists %d programs, the spec %d: %v", stem, len(secs), len(spec.Programs), secs)
		}
		for name, ps := range spec.Programs {
			if secs[name] != ps.SectionName {
				t.Errorf("%s: program %s: section %q, the spec says %q", stem, name, secs[name], ps.SectionName)
			}
		}
	}
}

// programObjects are the objects that hold programs, by stem.
var programObjects = map[string]func() (*ebpf.CollectionSpec, error){
	"network": bpf.LoadNetwork, "file": bpf.LoadFile, "exec": bpf.LoadExec, "tamper": bpf.LoadTamper,
	"ipc": bpf.LoadIpc, "sock": bpf.LoadSock, "lifecycle": bpf.LoadLifecycle,
}

// TestEveryAttachedHookHasAnID: every LSM and cgroup-BPF program of the
// objects attaches to a hook that has a (non-legacy) id of the same name,
// so that its records can name it exactly.
func TestEveryAttachedHookHasAnID(t *testing.T) {
	n := 0
	for stem, load := range programObjects {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for name, ps := range spec.Programs {
			hook, ok := strings.CutPrefix(ps.SectionName, "lsm/")
			if !ok && !strings.HasPrefix(ps.SectionName, "cgroup/") {
				continue // tracepoints and fentry programs refuse nothing
			}
			if !ok {
				hook = ps.SectionName
			}
			n++
			if h, ok := denial.HookByName(hook); !ok || h.String() != hook {
				t.Errorf("%s: program %s attaches to %s, which has no hook id", stem, name, ps.SectionName)
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d LSM and cgroup programs found", n)
	}
}

// TestRuleTableMatchesBPFEnum: every value of enum rule_id but RULE_FIELD
// has a rule whose name is the enum's, lower case with dashes; the names
// are distinct.
func TestRuleTableMatchesBPFEnum(t *testing.T) {
	e := enumOf(t, "rule_id")
	names := map[string]bool{}
	for _, r := range denial.AllRules {
		if names[string(r)] {
			t.Errorf("rule %s listed twice", r)
		}
		names[string(r)] = true
	}
	for _, v := range e.Values {
		if v.Name == "RULE_FIELD" {
			continue
		}
		want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v.Name, "RULE_")), "_", "-")
		if !names[want] {
			t.Errorf("%s = %d: no rule %q in denial.AllRules", v.Name, v.Value, want)
		}
	}
	if len(e.Values)-1+5 != len(denial.AllRules) {
		t.Errorf("enum rule_id has %d values, denial.AllRules %d (5 field rules)", len(e.Values), len(denial.AllRules))
	}
}
