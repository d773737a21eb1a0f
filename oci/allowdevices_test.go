package oci

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAllowDevicesAnnotation(t *testing.T) {
	r, err := ParseAnnotations(map[string]string{AnnotationRole: "reviewer",
		AnnotationAllowDevices: "c 226:128, /dev/dri/renderD128 ,b 7:0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c 226:128", "/dev/dri/renderD128", "b 7:0"}; !reflect.DeepEqual(r.AllowDevices, want) {
		t.Errorf("AllowDevices = %q, want %q", r.AllowDevices, want)
	}
	for v, says := range map[string]string{
		"":                                     "empty list",
		"c 1:3,,c 1:5":                         "empty entry",
		"c 1:3,c 1:3":                          "listed twice",
		"c 195:*":                              "wildcards",
		"dev/null":                             "must be absolute",
		"c 0:1":                                "major 0",
		"a *:* rwm":                            "not a type",
		strings.Repeat("c 1:3,", 16) + "c 1:4": "at most 16",
	} {
		_, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false", AnnotationAllowDevices: v})
		if !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), AnnotationAllowDevices) || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want ErrBadAnnotation naming %s and %q", v, err, AnnotationAllowDevices, says)
		}
	}
	if _, err := ParseAnnotations(map[string]string{AnnotationCeiling: "network=false", "enforcerd.io/Allow-Devices": "c 1:3"}); !errors.Is(err, ErrBadAnnotation) {
		t.Errorf("miscased key: %v", err)
	}
}
