package oci

import (
	"errors"
	"testing"
)

func TestProxyAllowAnnotation(t *testing.T) {
	r, err := ParseAnnotations(map[string]string{AnnotationRole: "general", AnnotationProxyAllow: "api.example.com, *.example.org"})
	if err != nil || r.ProxyAllow == nil || *r.ProxyAllow != "api.example.com, *.example.org" {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err = ParseAnnotations(map[string]string{AnnotationRole: "general"}); err != nil || r.ProxyAllow != nil {
		t.Fatalf("absent: %+v %v", r, err)
	}
	for _, bad := range []string{"", "a.*.com", "exa mple.com", "x,,y"} {
		if _, err := ParseAnnotations(map[string]string{AnnotationRole: "general", AnnotationProxyAllow: bad}); !errors.Is(err, ErrBadAnnotation) {
			t.Errorf("%q: %v, want ErrBadAnnotation", bad, err)
		}
	}
}
