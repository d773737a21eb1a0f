package oci

// Annotation spelling: an enforcerd.io/ annotation key in another letter
// case is an error, never dropped silently.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMiscasedAnnotationIsAnError: the package doc: "any other key with the
// enforcerd.io/ prefix is an error (a typo must not silently drop a
// ceiling)"; deploy/README: "Any other enforcerd.io/ key, or a malformed
// value, makes the hook fail". Annotation keys are case-sensitive, so
// "Enforcerd.io/ceiling" (or ENFORCERD.IO/...) next to a valid role
// annotation used to be ignored: the container was registered with the role
// alone (general: nothing restricted) and the hook exited 0. Such a key is
// now a malformed annotation (the hook exits 2) naming the key.
func TestMiscasedAnnotationIsAnError(t *testing.T) {
	for _, k := range []string{"Enforcerd.io/ceiling", "ENFORCERD.IO/ceiling", "enforcerd.IO/ceiling"} {
		r, err := ParseAnnotations(map[string]string{AnnotationRole: "general", k: "network=false,write=false"})
		if err == nil && r.Ceiling == "" {
			t.Errorf("DROPPED: annotation %s=network=false,write=false is ignored without an error (request %+v)", k, r)
		}
		if !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), k) {
			t.Errorf("annotation %s: err = %v, want ErrBadAnnotation naming the key", k, err)
		}
	}
}

// TestMiscasedAnnotationKeys: every key equal to a known key, or starting
// with the prefix, in another letter case is refused, alone or next to
// valid annotations; keys that merely resemble the prefix are someone
// else's.
func TestMiscasedAnnotationKeys(t *testing.T) {
	for _, k := range []string{
		"ENFORCERD.IO/ROLE", "Enforcerd.io/role", "enforcerd.Io/parent", "eNforcerd.io/x", "ENFORCERD.IO/",
		"enforcerd.io/Ceiling", "enforcerd.io/ROLE", "enforcerd.io/Audit-Only",
	} {
		for _, ann := range []map[string]string{
			{k: "network=false"},
			{AnnotationRole: "reviewer", k: "network=false"},
			{AnnotationCeiling: "network=false", k: "true"},
		} {
			_, err := ParseAnnotations(ann)
			if !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), k) {
				t.Errorf("%v: err = %v, want ErrBadAnnotation naming %s", ann, err, k)
			}
		}
	}
	for _, k := range []string{"enforcerd.iox/ceiling", "xenforcerd.io/ceiling", "enforcerd-io/ceiling", "Enforcerd.io", "io.enforcerd/ceiling"} {
		if MiscasedAnnotation(k) {
			t.Errorf("MiscasedAnnotation(%q) = true", k)
		}
		r, err := ParseAnnotations(map[string]string{AnnotationRole: "reviewer", k: "x"})
		if err != nil || r.Role != "reviewer" {
			t.Errorf("%s: %+v, %v; want it ignored", k, r, err)
		}
	}
	// Non-ASCII spellings that lower-case or fold to the prefix are
	// refused too.
	for _, k := range []string{"enforcerd.\u0130o/ceiling", "ENFORCERD.\u0130O/ceiling"} {
		if !MiscasedAnnotation(k) {
			t.Errorf("MiscasedAnnotation(%q) = false", k)
		}
		if _, err := ParseAnnotations(map[string]string{AnnotationRole: "reviewer", k: "x"}); !errors.Is(err, ErrBadAnnotation) {
			t.Errorf("%s: err = %v, want ErrBadAnnotation", k, err)
		}
	}
}

// hooksDirPatterns are the annotation key patterns of the hooks.d files
// podman and CRI-O read (deploy/hooks.d): the runtime runs the hook only
// for a container with a key matching one of them.
func hooksDirPatterns(t testing.TB) []*regexp.Regexp {
	t.Helper()
	files, err := filepath.Glob("../deploy/hooks.d/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("hooks.d files: %v, %v", files, err)
	}
	var out []*regexp.Regexp
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			When struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"when"`
		}
		if err := json.Unmarshal(b, &h); err != nil || len(h.When.Annotations) != 1 {
			t.Fatalf("%s: %v, when.annotations %v: want one pattern", f, err, h.When.Annotations)
		}
		for k, v := range h.When.Annotations {
			if v != ".*" {
				t.Fatalf("%s: value pattern %q, want .*", f, v)
			}
			out = append(out, regexp.MustCompile(k)) // as containers/common: regexp.MatchString
		}
	}
	return out
}

// ours: the hook must run for key (it reads it, or refuses it).
func ours(key string) bool {
	return strings.HasPrefix(key, AnnotationPrefix) || MiscasedAnnotation(key)
}

// TestHooksDirRunsForEveryKeyTheHookReadsOrRefuses: a hooks.d pattern that
// missed a key the hook would refuse (a mis-cased prefix, a key with a
// newline) would start the container without running the hook at all, its
// ceiling dropped; one that matched other keys would make the hook refuse
// containers that are not ours (no enforcerd annotation).
func TestHooksDirRunsForEveryKeyTheHookReadsOrRefuses(t *testing.T) {
	keys := append([]string{
		"Enforcerd.io/ceiling", "ENFORCERD.IO/ROLE", "enforcerd.IO/parent", "enforcerd.io/", "enforcerd.io/x\n",
		"enforcerd.\u0130o/ceiling", "enforcerd.\u0131o/ceiling", "enforcerd.iox/ceiling", "xenforcerd.io/ceiling",
		"io.enforcerd/ceiling", "enforcerd-io/role", "Enforcerd.io", "", "io.kubernetes.cri.container-type",
	}, AllAnnotations...)
	for _, re := range hooksDirPatterns(t) {
		for _, k := range keys {
			if re.MatchString(k) != ours(k) {
				t.Errorf("hooks.d pattern %q matches %q: %v; the hook reads or refuses it: %v", re, k, re.MatchString(k), ours(k))
			}
		}
	}
}

// FuzzHooksDirPattern: the hooks.d pattern matches exactly the keys the
// hook reads or refuses.
func FuzzHooksDirPattern(f *testing.F) {
	for _, k := range []string{"enforcerd.io/role", "Enforcerd.io/x", "enforcerd.\u0130o/", "ENFORCERD.IO", "k8s.io/x"} {
		f.Add(k)
	}
	res := hooksDirPatterns(f)
	f.Fuzz(func(t *testing.T, k string) {
		for _, re := range res {
			if re.MatchString(k) != ours(k) {
				t.Fatalf("hooks.d pattern %q matches %q: %v; the hook reads or refuses it: %v", re, k, re.MatchString(k), ours(k))
			}
		}
	})
}
