package oci

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/policy"
)

// podman43 is the annotation map podman 4.3.1 (Debian 12) gives a
// container run with extra (its own annotations, then the --annotation
// values, each split at its first "=" after pflag's StringSlice split
// the flag's value at commas).
func podman43(extra ...string) map[string]string {
	ann := map[string]string{
		"io.container.manager":                "libpod",
		"io.kubernetes.cri-o.Created":         "2026-12-05T23:50:23.123456789Z",
		"io.kubernetes.cri-o.TTY":             "false",
		"io.podman.annotations.autoremove":    "FALSE",
		"io.podman.annotations.init":          "FALSE",
		"io.podman.annotations.privileged":    "FALSE",
		"io.podman.annotations.publish-all":   "FALSE",
		"org.opencontainers.image.stopSignal": "15",
	}
	for _, flag := range extra {
		for _, item := range strings.Split(flag, ",") {
			k, v, _ := strings.Cut(item, "=")
			ann[k] = v
		}
	}
	return ann
}

// TestPodmanSplitCeilingRefused: deploy/README.md's podman example in the
// old form, `--annotation enforcerd.io/ceiling=network=false,write=false`,
// reaches the hook as enforcerd.io/ceiling=network=false plus a stray
// write=false: refused (it would run writable), naming the stray key and
// the per-field form; the per-field form registers both fields.
func TestPodmanSplitCeilingRefused(t *testing.T) {
	broken := podman43("enforcerd.io/ceiling=network=false,write=false")
	if broken["write"] != "false" || broken[AnnotationCeiling] != "network=false" {
		t.Fatalf("podman 4.3 map: %v", broken)
	}
	_, err := ParseAnnotations(broken)
	if !errors.Is(err, ErrBadAnnotation) || !errors.Is(err, ErrStrayCeilingKey) ||
		!strings.Contains(err.Error(), "write=false") || !strings.Contains(err.Error(), "--annotation enforcerd.io/write=false") {
		t.Fatalf("split ceiling: %v, want ErrStrayCeilingKey naming write=false and the per-field form", err)
	}
	fixed := podman43("enforcerd.io/network=false", "enforcerd.io/write=false")
	r, err := ParseAnnotations(fixed)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.ParseCeiling(r.Ceiling, policy.DefaultSession())
	if err != nil || c.Network || c.Write {
		t.Fatalf("per-field form: ceiling %q (%+v, %v), want network=false,write=false", r.Ceiling, c, err)
	}
}

func TestCeilingFieldAnnotations(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want string // "" with err
		err  error
	}{
		{map[string]string{AnnotationNetwork: "false"}, "network=false", nil},
		{map[string]string{AnnotationDepth: "2", AnnotationShell: "none", AnnotationNetwork: "deny"}, "network=deny,shell=none,depth=2", nil},
		{map[string]string{AnnotationCeiling: "write=false", AnnotationNetwork: "false"}, "write=false,network=false", nil},
		// Agreeing values (also spelled differently) are one field.
		{map[string]string{AnnotationCeiling: "network=deny", AnnotationNetwork: "false"}, "network=deny", nil},
		{map[string]string{AnnotationCeiling: "network=false", AnnotationNetwork: "true"}, "", ErrCeilingConflict},
		{map[string]string{AnnotationCeiling: "depth=1", AnnotationDepth: "2"}, "", ErrCeilingConflict},
		{map[string]string{AnnotationWrite: "maybe"}, "", policy.ErrBadCeiling},
		{map[string]string{AnnotationWrite: "false,network=true"}, "", policy.ErrBadCeiling},
		{map[string]string{AnnotationCeiling: "network=false", "shell": "none"}, "", ErrStrayCeilingKey},
		{map[string]string{AnnotationNetwork: "false", " Write ": "false"}, "", ErrStrayCeilingKey},
		{map[string]string{AnnotationCeiling: "network=false", "tools": "false"}, "", ErrStrayCeilingKey},
		// Without a ceiling annotation a "write" key is someone else's.
		{map[string]string{AnnotationRole: "test", "write": "x"}, "", nil},
	} {
		r, err := ParseAnnotations(tc.ann)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !errors.Is(err, ErrBadAnnotation) {
				t.Errorf("%v: %v, want %v", tc.ann, err, tc.err)
			}
			continue
		}
		if err != nil || r.Ceiling != tc.want {
			t.Errorf("%v: ceiling %q, %v; want %q", tc.ann, r.Ceiling, err, tc.want)
		}
	}
}

// TestDecodeStateRefusesDuplicateKeys: a key given twice, in the
// annotations or anywhere, is refused instead of last-wins.
func TestDecodeStateRefusesDuplicateKeys(t *testing.T) {
	for _, in := range []string{
		`{"ociVersion":"1.0.2","id":"c","pid":2,"annotations":{"enforcerd.io/ceiling":"network=deny","enforcerd.io/ceiling":"network=allow"}}`,
		`{"ociVersion":"1.0.2","id":"c","pid":2,"pid":3}`,
		`{"ociVersion":"1.0.2","id":"c","ID":"d","pid":2}`,
		`{"ociVersion":"1.0.2","id":"c","pid":2,"annotations":{},"Annotations":{"enforcerd.io/role":"test"}}`,
	} {
		if _, err := DecodeState(strings.NewReader(in), true); !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%s: %v, want ErrBadState naming the repeated key", in, err)
		}
	}
	// Annotation keys differing in case are different keys.
	ok := `{"ociVersion":"1.0.2","id":"c","pid":2,"annotations":{"a":"1","A":"2"}}`
	if _, err := DecodeState(strings.NewReader(ok), true); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
}

// FuzzMergeCeiling: never panics; a merged ceiling parses, and gives every
// field its text and its field value agree on.
func FuzzMergeCeiling(f *testing.F) {
	f.Add("network=false", "write", "false")
	f.Add("network=deny", "network", "false")
	f.Add("network=false", "network", "true")
	f.Add("", "depth", "3")
	f.Add("shell=none,", "tools", "x")
	f.Add("write=false", "bogus", "1")
	f.Fuzz(func(t *testing.T, text, k, v string) {
		out, err := MergeCeiling(text, map[string]string{k: v})
		if err != nil {
			if !errors.Is(err, ErrCeilingConflict) && !errors.Is(err, policy.ErrBadCeiling) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		got, err := policy.ParseCeiling(out, policy.DefaultSession())
		if err != nil {
			t.Fatalf("merged %q does not parse: %v", out, err)
		}
		field, _ := policy.ParseCeiling(k+"="+v, policy.DefaultSession())
		if again, _ := policy.ParseCeiling(out+"", field); again != got {
			t.Fatalf("merged %q loses %s=%s", out, k, v)
		}
	})
}

// TestDeployReadmePodmanExamples: every `podman run` line of
// deploy/README.md, as podman 4.3 hands its --annotation flags to the
// hook, is accepted and gives the ceiling it writes.
func TestDeployReadmePodmanExamples(t *testing.T) {
	b, err := os.ReadFile("../deploy/README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		args := strings.Fields(line)
		if len(args) < 2 || args[0] != "podman" || args[1] != "run" {
			continue
		}
		var flags []string
		want := map[string]string{}
		for i := 2; i+1 < len(args); i++ {
			if args[i] == "--annotation" {
				flags = append(flags, args[i+1])
				if k, v, ok := strings.Cut(strings.TrimPrefix(args[i+1], AnnotationPrefix), "="); ok && keyIndex(k) < len(policy.CeilingKeys) {
					want[k] = v
				}
			}
		}
		n++
		r, err := ParseAnnotations(podman43(flags...))
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		for k, v := range want {
			got, _ := policy.ParseCeiling(r.Ceiling, policy.Ceiling{})
			field, _ := policy.ParseCeiling(k+"="+v, policy.Ceiling{})
			if again, _ := policy.ParseCeiling(r.Ceiling, field); again != got {
				t.Errorf("%q: ceiling %q lacks %s=%s", line, r.Ceiling, k, v)
			}
		}
	}
	if n == 0 {
		t.Fatal("no podman run example in deploy/README.md")
	}
}
