package proxy

import (
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// TestProxyBadFlagsExit2NamingTheProblem: nothing listens; the message
// names the flag and the value.
func TestProxyBadFlagsExit2NamingTheProblem(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "give --allow-domain"},
		{[]string{"proxy", "--allow-domain", "a.*.com"}, `allow-domain: domain pattern "a.*.com"`},
		{[]string{"proxy", "--allow-domain", "a.com", "--allow-port", "0"}, "allow-port: 0 is out of range"},
		{[]string{"proxy", "--allow-domain", "a.com", "--allow-port", "x"}, `invalid value "x" for flag --allow-port`},
		{[]string{"proxy", "--allow-domain", "a.com", "--allow-private", "10.0.0.0/99"}, "allow-private"},
		{[]string{"proxy", "--allow-domain", "a.com", "--resolve", "a.com"}, "resolve: \"a.com\": want NAME=IP"},
		{[]string{"proxy", "--allow-domain", "a.com", "--listen-tcp", "0.0.0.0:3128"}, "not a loopback address"},
		{[]string{"proxy", "--allow-domain", "a.com", "--socket", "rel.sock"}, "socket: \"rel.sock\""},
		{[]string{"proxy", "--allow-domain", "a.com", "--socket-mode", "8"}, "socket-mode"},
		{[]string{"proxy", "--allow-domain", "a.com", "--audit", "rel.log"}, "audit"},
		{[]string{"proxy", "--allow-domain", "a.com", "--dial-timeout", "0s"}, "dial-timeout"},
		{[]string{"proxy", "--allow-domain", "a.com", "extra"}, `unexpected argument "extra"`},
		{[]string{"proxy", "--allow-domains", "a.com"}, "flag provided but not defined: --allow-domains"},
	} {
		code, out, errs := cmdline(tc.args...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "enforcerd proxy --help") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.args, code, out, errs, tc.want)
		}
	}
}
