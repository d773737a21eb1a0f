package main

// run --allow-connect: parsing, resolution and the usage errors (exit 2,
// nothing run).

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/internal/endpoint"
)

func TestRunAllowConnectParses(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o, _, err := parseRunArgs([]string{"--network=deny", "--allow-connect", "tcp:127.0.0.1:80",
		"--allow-connect=udp:[::1]:53", "--allow-connect", "unix:" + sock, "--", "true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.allowConnect) != 3 || o.allowConnect[2].Kind != endpoint.Unix || o.allowConnect[2].Ino == 0 {
		t.Fatalf("allowConnect = %+v", o.allowConnect)
	}
	if o.ceiling.Network {
		t.Errorf("ceiling %v, want network denied", o.ceiling)
	}
}

func TestRunAllowConnectBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := 1; i <= 17; i++ {
		many = append(many, "--allow-connect", fmt.Sprintf("tcp:127.0.0.1:%d", 1000+i))
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"network allowed", []string{"--allow-connect", "tcp:127.0.0.1:80", "--", "true"}, "--allow-connect needs --network=deny"},
		{"unparsable", []string{"--network=deny", "--allow-connect", "tcp:localhost:80", "--", "true"}, `"tcp:localhost:80"`},
		{"port 0", []string{"--network=deny", "--allow-connect", "udp:127.0.0.1:0", "--", "true"}, "port 0"},
		{"abstract", []string{"--network=deny", "--allow-connect", "unix:@x", "--", "true"}, "abstract"},
		{"missing path", []string{"--network=deny", "--allow-connect", "unix:" + filepath.Join(dir, "missing"), "--", "true"}, "no such file"},
		{"not a socket", []string{"--network=deny", "--allow-connect", "unix:" + file, "--", "true"}, "not a unix socket"},
		{"too many", append(append([]string{"--network=deny"}, many...), "--", "true"), "at most 16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := enforcerd(t, nil, append([]string{"run"}, c.args...)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, c.says) || !strings.Contains(r.stderr, "--allow-connect") {
				t.Errorf("stderr %q, want it to name --allow-connect and %q", r.stderr, c.says)
			}
		})
	}
}
