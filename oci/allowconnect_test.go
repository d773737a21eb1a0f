package oci

import (
	"errors"
	"reflect"
	"testing"
)

func TestAllowConnectAnnotation(t *testing.T) {
	r, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false",
		AnnotationAllowConnect: "tcp:10.0.0.1:443, udp:[::1]:53,unix:/run/x.sock"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tcp:10.0.0.1:443", "udp:[::1]:53", "unix:/run/x.sock"}; !reflect.DeepEqual(r.AllowConnectList(), want) {
		t.Errorf("AllowConnectList = %q, want %q", r.AllowConnectList(), want)
	}
	if (Request{}).AllowConnectList() != nil {
		t.Error("no annotation: want nil")
	}
	for _, v := range []string{"", "tcp:10.0.0.1:0", "tcp:10.0.0.1:443,,udp:1.2.3.4:5", "unix:relative", "http://x"} {
		if _, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false", AnnotationAllowConnect: v}); !errors.Is(err, ErrBadAnnotation) {
			t.Errorf("%q: %v, want ErrBadAnnotation", v, err)
		}
	}
	if _, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false", "enforcerd.io/Allow-Connect": "tcp:1.2.3.4:5"}); !errors.Is(err, ErrBadAnnotation) {
		t.Errorf("miscased key: %v", err)
	}
}
