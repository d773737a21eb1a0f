package daemon

import (
	"reflect"
	"strings"
	"testing"
)

func TestProxyConfigSection(t *testing.T) {
	c := DefaultConfig()
	err := parseConfig([]byte("proxy:\n  enabled: true\n  allow_domains: [api.example.com, \"*.example.org\"]\n  allow_ports: [443, 8443]\n  listen_tcp: 127.0.0.1:3128\n"), &c)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Proxy.Enabled || !reflect.DeepEqual(c.Proxy.AllowPorts, []int{443, 8443}) ||
		c.Proxy.Socket != "/run/enforcerd/proxy.sock" || c.Proxy.Audit != "/var/log/enforcerd/proxy.jsonl" ||
		c.Proxy.ListenTCP != "127.0.0.1:3128" || len(c.Proxy.AllowDomains) != 2 {
		t.Fatalf("proxy = %+v", c.Proxy)
	}
	for text, want := range map[string]string{
		"proxy:\n  enabled: true\n":                                                    "proxy.allow_domains: empty",
		"proxy:\n  enabled: true\n  allow_domains: [\"a.*.com\"]\n":                    `domain pattern "a.*.com"`,
		"proxy:\n  enabled: true\n  allow_domains: [a.com]\n  allow_ports: [0]\n":      "allow-port: 0",
		"proxy:\n  enabled: true\n  allow_domains: [a.com]\n  listen_tcp: 0.0.0.0:1\n": "not a loopback address",
		"proxy:\n  enabled: true\n  allow_domain: [a.com]\n":                           "proxy.allow_domain: unknown key",
	} {
		c := DefaultConfig()
		if err := parseConfig([]byte(text), &c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", text, err, want)
		}
	}
}
