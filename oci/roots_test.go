package oci

import (
	"errors"
	"strings"
	"testing"
)

func TestWriteRootsAnnotation(t *testing.T) {
	r, err := ParseAnnotations(map[string]string{AnnotationCeiling: "write=false", AnnotationWriteRoots: "/work, /tmp/x/"})
	if err != nil || strings.Join(r.WriteRoots, "|") != "/work|/tmp/x" {
		t.Fatalf("got %v, %v", r.WriteRoots, err)
	}
	for _, v := range []string{"", "work", "/a,/a", "/a,,/b", strings.Repeat("/r,", 16) + "/s"} {
		_, err := ParseAnnotations(map[string]string{AnnotationCeiling: "write=false", AnnotationWriteRoots: v})
		if !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), AnnotationWriteRoots) {
			t.Errorf("%q: %v, want an ErrBadAnnotation naming %s", v, err, AnnotationWriteRoots)
		}
	}
}
