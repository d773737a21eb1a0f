package oci

// attack11: annotation spelling. FAILS while a mis-cased enforcerd.io/
// annotation is dropped silently.

import "testing"

// TestAttack11MiscasedAnnotationDroppedSilently: the package doc: "any
// other key with the enforcerd.io/ prefix is an error (a typo must not
// silently drop a ceiling)"; deploy/README: "Any other enforcerd.io/ key,
// or a malformed value, makes the hook fail". The prefix match is
// case-sensitive, so "Enforcerd.io/ceiling" (or ENFORCERD.IO/...) next to a
// valid role annotation is ignored: the container is registered with the
// role alone (general: nothing restricted) and the hook exits 0. Seen with
// the real hook and daemon: `enforcerd hook createRuntime` with
// {"enforcerd.io/role":"general","Enforcerd.io/ceiling":"network=false"}
// registers network=true and exits 0.
func TestAttack11MiscasedAnnotationDroppedSilently(t *testing.T) {
	for _, k := range []string{"Enforcerd.io/ceiling", "ENFORCERD.IO/ceiling", "enforcerd.IO/ceiling"} {
		r, err := ParseAnnotations(map[string]string{AnnotationRole: "general", k: "network=false,write=false"})
		if err == nil && r.Ceiling == "" {
			t.Errorf("DROPPED: annotation %s=network=false,write=false is ignored without an error (request %+v)", k, r)
		}
	}
}
