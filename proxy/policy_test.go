package proxy

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigErrorsNameTheSetting(t *testing.T) {
	ok := Config{AllowDomains: []string{"a.com"}, Socket: "/run/x.sock", DialTimeout: 1}
	if _, err := ok.Compile(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"allow-domain":  func(c *Config) { c.AllowDomains = []string{"a b"} },
		"allow-port":    func(c *Config) { c.AllowPorts = []int{70000} },
		"allow-private": func(c *Config) { c.AllowPrivate = []string{"10.0.0.0/33x"} },
		"resolve":       func(c *Config) { c.Resolve = []string{"a.com"} },
		"socket-mode":   func(c *Config) { c.SocketMode = "999" },
		"socket:":       func(c *Config) { c.Socket = "rel.sock" },
		"listen-tcp":    func(c *Config) { c.ListenTCP = "10.0.0.1:80" },
		"no listener":   func(c *Config) { c.Socket = "" },
		"audit":         func(c *Config) { c.Audit = "rel.log" },
		"dial-timeout":  func(c *Config) { c.DialTimeout = 0 },
	} {
		c := ok
		mut(&c)
		if _, err := c.Compile(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
