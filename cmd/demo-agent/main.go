// Command demo-agent is the small agent-like workload `make demo` runs under
// each role's ceiling: it fetches its task over HTTP from a loopback server,
// reads a file, edits a file in its workspace, and runs a shell command, and
// reports each step's outcome. `demo-agent serve ADDR` is the task server.
// With DEMO_PROXY=/path/to/socket the HTTP fetch goes through the HTTP
// proxy listening on that unix socket (enforcerd proxy), as a no-network
// agent reaches its model API.
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: demo-agent URL WORKSPACE | demo-agent serve ADDR")
		os.Exit(2)
	}
	url, ws := os.Args[1], os.Args[2]
	failed := 0
	step := func(name string, f func() (string, error)) {
		out, err := f()
		if err != nil {
			failed++
			fmt.Printf("  %-28s FAILED: %v\n", name, err)
			return
		}
		fmt.Printf("  %-28s ok: %s\n", name, out)
	}
	step("fetch task over HTTP", func() (string, error) {
		c := http.Client{Timeout: 5 * time.Second}
		if sock := os.Getenv("DEMO_PROXY"); sock != "" {
			proxy, _ := neturl.Parse("http://enforcerd-proxy")
			c.Transport = &http.Transport{Proxy: http.ProxyURL(proxy),
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", sock)
				}}
		}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return fmt.Sprintf("%q", string(b)), err
	})
	step("read README", func() (string, error) {
		b, err := os.ReadFile(filepath.Join(ws, "README"))
		return fmt.Sprintf("%d bytes", len(b)), err
	})
	step("edit notes.txt", func() (string, error) {
		f, err := os.OpenFile(filepath.Join(ws, "notes.txt"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("agent was here\n")
		return "appended a line", err
	})
	step("shell: ls workspace", func() (string, error) {
		out, err := exec.Command("/bin/sh", "-c", "ls "+ws+" | wc -l").CombinedOutput()
		return fmt.Sprintf("%q", string(out)), err
	})
	step("shell: write a file", func() (string, error) {
		out, err := exec.Command("/bin/sh", "-c", "env touch "+filepath.Join(ws, "from-shell")).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		return "created from-shell", nil
	})
	fmt.Printf("  %d step(s) failed\n", failed)
}

func serve(addr string) {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "summarise the README")
	})
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
