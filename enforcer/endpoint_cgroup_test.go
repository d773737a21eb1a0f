package enforcer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestNativeEndpointsCgroupLayer: N8 at the cgroup-BPF hooks alone (a host
// without BPF LSM; natively, where the LSM layer cannot load): a listed
// TCP or UDP endpoint is reached with its effect, an unlisted port and the
// other protocol to a listed port are refused with the effect absent, and
// Coverage names the network-endpoints gap.
func TestNativeEndpointsCgroupLayer(t *testing.T) {
	// Native only: in the VM the TestEndpoints* tests cover both layers.
	vmtest.NativeOnly(t)
	vmtest.RequireRoot(t)
	enf, mount, own, _ := privateEnforcer(t, "endpoint")
	requireCgroupLayer(t, enf)
	base := own.Group
	run := func(t *testing.T, listed []string, op, target string) probe.Result {
		t.Helper()
		cg, err := cgroup.Create(mount, fmt.Sprintf("%s/c-%d", base, time.Now().UnixNano()))
		if err != nil {
			t.Fatal(err)
		}
		defer cg.Remove(5 * time.Second)
		if listed != nil {
			en := entry.Entry{Ceiling: networkDeny, AllowPartial: true, AllowConnect: parseEndpoints(t, listed...)}
			if enf.LayerError(coverage.LayerLSM) != nil {
				gaps := enf.CoverageOf(en).Codes()
				found := false
				for _, g := range gaps {
					found = found || g == coverage.GapNetworkEndpoints
				}
				if !found {
					t.Errorf("coverage %v: want %s", gaps, coverage.GapNetworkEndpoints)
				}
			}
			if err := enf.Register(cg, en); err != nil {
				t.Fatal(err)
			}
			defer enf.Unregister(cg.ID)
		}
		d, err := cg.OpenDir()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r := probe.Run(t, d, probe.Cmd{Op: op, Args: []string{target}})
		if r.Setup != "" {
			t.Fatalf("probe could not attempt %s: %v", op, r)
		}
		return r
	}
	ok := func(t *testing.T, listed []string, op string, s *echoServer) {
		t.Helper()
		if r := run(t, listed, op, s.addr); r.Errno != 0 || r.Exit > 0 {
			t.Fatalf("%s %s (listed %v): %v, want success", op, s.addr, listed, r)
		}
		if happened, what := s.effect(); !happened {
			t.Fatalf("%s %s: %s", op, s.addr, what)
		}
	}
	denied := func(t *testing.T, listed []string, op string, s *echoServer) {
		t.Helper()
		ok(t, nil, op, s) // control: unregistered
		if r := run(t, listed, op, s.addr); !r.Denied() {
			t.Errorf("BYPASS %s %s (listed %v): %v, want EPERM", op, s.addr, listed, r)
		}
		if happened, what := s.effect(); happened {
			t.Errorf("BYPASS %s %s: %s", op, s.addr, what)
		}
	}
	tcp := listen(t, "tcp4", "127.0.0.1:0")
	udp := listen(t, "udp4", "127.0.0.1:0")
	other := listen(t, "tcp4", "127.0.0.1:0")
	udpSameAsTCP := listen(t, "udp4", tcp.addr)
	listed := []string{"tcp:" + tcp.addr, "udp:" + udp.addr}
	t.Run("tcp-listed", func(t *testing.T) { ok(t, listed, "tcp-send", tcp) })
	t.Run("udp-listed", func(t *testing.T) { ok(t, listed, "udp-sendto", udp) })
	t.Run("tcp-unlisted-port", func(t *testing.T) { denied(t, listed, "tcp-send", other) })
	t.Run("tcp-fastopen-listed", func(t *testing.T) { ok(t, listed, "tcp-fastopen", tcp) })
	t.Run("tcp-fastopen-unlisted-port", func(t *testing.T) { denied(t, listed, "tcp-fastopen", other) })
	t.Run("udp-to-listed-tcp-port", func(t *testing.T) { denied(t, []string{"tcp:" + tcp.addr}, "udp-sendto", udpSameAsTCP) })
	t.Run("udp-to-unlisted-port-of-listed-kind", func(t *testing.T) { denied(t, listed, "udp-sendto", udpSameAsTCP) })
}
