package daemon

import (
	"strings"
	"testing"
)

// TestNRIConfig: the nri: section decodes over the defaults, and a bad
// or unknown key is an error naming it.
func TestNRIConfig(t *testing.T) {
	c := DefaultConfig()
	if err := parseConfig([]byte("nri:\n  enable: true\n  mode: direct\n  namespaces:\n    agents:\n      max_ceiling: network=false\n      require_annotation: true\n"), &c); err != nil {
		t.Fatal(err)
	}
	if !c.NRI.Enable || c.NRI.Mode != "direct" || !c.NRI.Namespaces["agents"].RequireAnnotation || c.NRI.Socket != DefaultConfig().NRI.Socket {
		t.Fatalf("nri = %+v", c.NRI)
	}
	for bad, want := range map[string]string{
		"nri:\n  enabel: true\n":                                        "enabel",
		"nri:\n  mode: sideways\n":                                      "nri.mode",
		"nri:\n  namespaces:\n    a:\n      max: x\n":                   "max",
		"nri:\n  max_ceiling: network=perhaps\n":                        "nri.max_ceiling",
		"nri:\n  namespaces:\n    a:\n      default_ceiling: shell=x\n": "nri.namespaces.a.default_ceiling",
	} {
		c := DefaultConfig()
		if err := parseConfig([]byte(bad), &c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %s", bad, err, want)
		}
	}
}
