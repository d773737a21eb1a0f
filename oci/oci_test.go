package oci

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

func TestDecodeStateAcceptsRuncDevVersion(t *testing.T) {
	in := `{"ociVersion":"1.0.2-dev","id":"ctr-1","status":"created","pid":4242,"bundle":"/b","annotations":{"enforcerd.io/role":"reviewer"},"newField":true}`
	st, err := DecodeState(strings.NewReader(in), true)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "ctr-1" || st.Pid != 4242 || st.Annotations[AnnotationRole] != "reviewer" {
		t.Fatalf("state = %+v", st)
	}
}

func TestDecodeStateRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          ``,
		"not json":       `hello`,
		"array":          `[]`,
		"no version":     `{"id":"a","pid":1}`,
		"version 2":      `{"ociVersion":"2.0.0","id":"a","pid":1}`,
		"bad id":         `{"ociVersion":"1.0.0","id":"../a","pid":1}`,
		"no id":          `{"ociVersion":"1.0.0","pid":1}`,
		"no pid":         `{"ociVersion":"1.0.0","id":"a"}`,
		"negative pid":   `{"ociVersion":"1.0.0","id":"a","pid":-1}`,
		"trailing":       `{"ociVersion":"1.0.0","id":"a","pid":1} {}`,
		"pid as string":  `{"ociVersion":"1.0.0","id":"a","pid":"1"}`,
		"oversized":      `{"ociVersion":"1.0.0","id":"a","pid":1,"bundle":"` + strings.Repeat("x", MaxStateBytes) + `"}`,
		"annotation num": `{"ociVersion":"1.0.0","id":"a","pid":1,"annotations":{"enforcerd.io/role":1}}`,
	} {
		if _, err := DecodeState(strings.NewReader(in), true); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: err = %v, want ErrBadState", name, err)
		}
	}
	// poststop: the process is gone, pid 0 is fine.
	if _, err := DecodeState(strings.NewReader(`{"ociVersion":"1.2.0","id":"a","status":"stopped"}`), false); err != nil {
		t.Fatal(err)
	}
}

func TestParseAnnotations(t *testing.T) {
	r, err := ParseAnnotations(map[string]string{
		AnnotationRole: "reviewer", AnnotationCeiling: "network=deny,write=false", AnnotationParent: "p-1",
		AnnotationAuditOnly: "true", AnnotationToolGroups: "messaging", "io.kubernetes.other": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, Request{Role: "reviewer", Ceiling: "network=deny,write=false", Parent: "p-1", AuditOnly: true, ToolGroups: "messaging"}) {
		t.Fatalf("request = %+v", r)
	}
	bad := []map[string]string{
		{AnnotationCeiling: "network=maybe"},
		{AnnotationCeiling: "network=false,network=false"},
		{AnnotationCeiling: "netwrk=false"},
		{AnnotationCeiling: ""},
		{AnnotationRole: " "},
		{AnnotationRole: "a\nb"},
		{AnnotationRole: "reviewer", AnnotationParent: "bad/id"},
		{AnnotationRole: "reviewer", AnnotationAuditOnly: "yes"},
		{AnnotationRole: "reviewer", "enforcerd.io/celing": "network=false"},
		{AnnotationParent: "p"},
	}
	for _, ann := range bad {
		if _, err := ParseAnnotations(ann); !errors.Is(err, ErrBadAnnotation) {
			t.Errorf("%v: err = %v, want ErrBadAnnotation", ann, err)
		}
	}
	if _, err := ParseAnnotations(map[string]string{"other": "x"}); !errors.Is(err, ErrNoAnnotation) {
		t.Errorf("no annotation: %v", err)
	}
}

// A role annotation must name a role: an unknown name and an empty value
// are errors listing the valid names, never a fallback to explore or to the
// default; a container without the annotation gets the default.
func TestParseAnnotationsRole(t *testing.T) {
	for _, v := range []string{"", " ", "\t", "hacker", "reviwer", "auditor", "wor\u212Aer", "read_only"} {
		_, err := ParseAnnotations(map[string]string{AnnotationRole: v, AnnotationCeiling: "network=false"})
		if !errors.Is(err, ErrBadAnnotation) || !errors.Is(err, policy.ErrUnknownRole) {
			t.Errorf("role %q: err = %v, want a bad annotation naming the role", v, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bad enforcerd annotation: enforcerd.io/role: ") ||
			!strings.Contains(err.Error(), "valid names: roles advisor, custom, explore, general, implement, planner, reviewer, test;") {
			t.Errorf("role %q: message %q", v, err)
		}
	}
	for _, v := range []string{"reviewer", " Reviewer ", "SCOUT", "manager", "smoke-runner"} {
		r, err := ParseAnnotations(map[string]string{AnnotationRole: v})
		if err != nil || r.Role != v {
			t.Errorf("role %q: %+v, %v", v, r, err)
		}
	}
	r, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false"})
	if err != nil || r.Role != "" {
		t.Fatalf("no role annotation: %+v, %v", r, err)
	}
}

// FuzzParseAnnotations: never panics; an accepted ceiling always parses
// with the policy core; keys outside the vocabulary, and keys with the
// prefix in another letter case, are never accepted.
func FuzzParseAnnotations(f *testing.F) {
	f.Add("reviewer", "network=false,write=false", "p", "true", "enforcerd.io/x", "v")
	f.Add("Manager", "", "", "FALSE", "", "")
	f.Add("reviwer", "network=false", "", "", "", "")
	f.Add("x", "", "", "", "enforcerd.io/role", "")
	f.Add("", "shell=none", "", "false", "", "")
	f.Add("x", "network=maybe", "a/b", "1", "enforcerd.io/role", "")
	f.Add("general", "", "", "", "Enforcerd.io/ceiling", "network=false")
	f.Add("", "write=false", "", "", "ENFORCERD.IO/CEILING", "")
	f.Add("reviewer", "", "", "", "enforcerd.io/Role", "general")
	f.Add("", "write=false", "", "", "enforcerd.io/write-roots", "/work, /tmp")
	f.Add("", "write=false", "", "", "enforcerd.io/write-roots", "rel,/a,/a")
	f.Fuzz(func(t *testing.T, role, ceiling, parent, audit, k, v string) {
		ann := map[string]string{}
		if role != "" {
			ann[AnnotationRole] = role
		}
		if ceiling != "" {
			ann[AnnotationCeiling] = ceiling
		}
		if parent != "" {
			ann[AnnotationParent] = parent
		}
		if audit != "" {
			ann[AnnotationAuditOnly] = audit
		}
		if k != "" {
			ann[k] = v
		}
		r, err := ParseAnnotations(ann)
		if err != nil {
			if !errors.Is(err, ErrBadAnnotation) && !errors.Is(err, ErrNoAnnotation) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if r.Ceiling != "" {
			if _, err := policy.ParseCeiling(r.Ceiling, policy.DefaultSession()); err != nil {
				t.Fatalf("accepted ceiling %q does not parse: %v", r.Ceiling, err)
			}
		}
		if r.WriteRoots != nil {
			if again, err := policy.CheckWriteRootPaths(r.WriteRoots); err != nil || len(again) != len(r.WriteRoots) {
				t.Fatalf("accepted write roots %q: %v", r.WriteRoots, err)
			}
		}
		if r.Parent != "" && !ValidID(r.Parent) {
			t.Fatalf("accepted parent %q", r.Parent)
		}
		if _, given := ann[AnnotationRole]; given {
			if _, err := policy.LookupRole(r.Role); err != nil || r.Role != ann[AnnotationRole] {
				t.Fatalf("accepted role %q: %v", ann[AnnotationRole], err)
			}
		}
		for key := range ann {
			if MiscasedAnnotation(key) {
				t.Fatalf("accepted mis-cased key %q", key)
			}
			if strings.HasPrefix(key, AnnotationPrefix) {
				known := false
				for _, a := range AllAnnotations {
					known = known || a == key
				}
				if !known {
					t.Fatalf("accepted unknown key %q", key)
				}
			}
		}
	})
}

// FuzzDecodeState: never panics; accepted states satisfy the invariants the
// hook relies on.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"ociVersion":"1.0.2-dev","id":"c","status":"created","pid":1,"bundle":"/b","annotations":{"enforcerd.io/role":"test"}}`))
	f.Add([]byte(`{"ociVersion":"1.2.0","id":"c","pid":0}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"ociVersion":"1","id":"a:b+c","pid":2147483647}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, needPID := range []bool{true, false} {
			st, err := DecodeState(strings.NewReader(string(b)), needPID)
			if err != nil {
				if !errors.Is(err, ErrBadState) {
					t.Fatalf("unclassified error %v", err)
				}
				continue
			}
			if !ValidID(st.ID) || !strings.HasPrefix(st.Version, "1") || st.Pid < 0 || (needPID && st.Pid == 0) {
				t.Fatalf("accepted bad state %+v", st)
			}
		}
	})
}

func TestEntrypoint(t *testing.T) {
	cfg := `{"ociVersion":"1.0.2","process":{"args":["sh","-c","x"],"env":["A=1","PATH=/usr/bin","PATH=/bin"],"cwd":"/w"},"root":{"path":"rootfs"}}`
	p, err := Entrypoint(strings.NewReader(cfg), "/run/b", 42)
	want := progcheck.Program{Path: "sh", Root: "/proc/42/root/run/b/rootfs", EnvPath: "/bin", Cwd: "/w"}
	if err != nil || p != want {
		t.Fatalf("Entrypoint = %+v, %v; want %+v", p, err, want)
	}
	abs := `{"process":{"args":["/entry"]},"root":{"path":"/var/lib/c/../c/rootfs"}}`
	if p, err := Entrypoint(strings.NewReader(abs), "relative", 7); err != nil || p.Root != "/proc/7/root/var/lib/c/rootfs" || p.EnvPath != "" {
		t.Fatalf("absolute root.path: %+v, %v", p, err)
	}
	for name, bad := range map[string]string{
		"no process":      `{"root":{"path":"r"}}`,
		"no args":         `{"process":{"args":[]},"root":{"path":"r"}}`,
		"empty arg":       `{"process":{"args":[""]},"root":{"path":"r"}}`,
		"no root":         `{"process":{"args":["x"]}}`,
		"relative bundle": `{"process":{"args":["x"]},"root":{"path":"r"}}`,
		"trailing":        `{"process":{"args":["x"]},"root":{"path":"/r"}} {}`,
		"not json":        `{`,
		"relative cwd":    `{"process":{"args":["x"],"cwd":"w"},"root":{"path":"/r"}}`,
		"too large":       `{"process":{"args":["x"]},"root":{"path":"/r"},"hostname":"` + strings.Repeat("a", MaxConfigBytes) + `"}`,
	} {
		bundle := "/b"
		if name == "relative bundle" {
			bundle = "b"
		}
		if _, err := Entrypoint(strings.NewReader(bad), bundle, 1); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
}

// FuzzEntrypoint: never panics; an accepted entrypoint is a valid
// progcheck.Program whose root lies under the init's /proc/PID/root.
func FuzzEntrypoint(f *testing.F) {
	f.Add([]byte(`{"process":{"args":["sh"],"env":["PATH=/bin"],"cwd":"/"},"root":{"path":"rootfs"}}`), "/b")
	f.Add([]byte(`{"process":{"args":["/x"]},"root":{"path":"/../../etc"}}`), "")
	f.Fuzz(func(t *testing.T, b []byte, bundle string) {
		p, err := Entrypoint(bytes.NewReader(b), bundle, 9)
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted %+v: %v", p, err)
		}
		if p.Root != "/proc/9/root" && !strings.HasPrefix(p.Root, "/proc/9/root/") {
			t.Fatalf("root %q is not under /proc/9/root", p.Root)
		}
	})
}

// TestEveryAnnotationHasAStep: the parse table and AllAnnotations name the
// same keys, so a key added to one is not silently unknown or unchecked.
func TestEveryAnnotationHasAStep(t *testing.T) {
	if len(annotationSteps) != len(AllAnnotations) {
		t.Errorf("%d parse steps for %d annotations", len(annotationSteps), len(AllAnnotations))
	}
	for _, a := range AllAnnotations {
		if _, ok := annotationSteps[a]; !ok {
			t.Errorf("%s has no parse step", a)
		}
	}
}
