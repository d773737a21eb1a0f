package daemon

import (
	"reflect"
	"testing"
)

// TestDeployConfigIsTheDefaults: deploy/config.yaml says it holds the
// defaults; it must parse and equal DefaultConfig.
func TestDeployConfigIsTheDefaults(t *testing.T) {
	c, err := LoadConfig("../deploy/config.yaml", true)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	c.Proxy.AllowDomains, c.Proxy.AllowPrivate, c.Proxy.Resolve = d.Proxy.AllowDomains, d.Proxy.AllowPrivate, d.Proxy.Resolve
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("deploy/config.yaml = %+v\nwant %+v", c, d)
	}
}
