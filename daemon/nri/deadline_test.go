package nri

import (
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
)

// TestAttackSlowRegistryRefusesBeforeRuntimeTimeout: a pod's author can
// make the registry slow (a shell=none entrypoint of up to 1 GiB, or
// many PATH candidates, are all read and scanned under the registry's
// lock). Released runtimes (nri before v0.12.4: containerd 2.4.2 embeds
// v0.12.3) treat a request that outlives plugin_request_timeout as
// fatal: they close the plugin and run the container as if it had
// answered nothing, unconfined. So the plugin must answer before the
// runtime's deadline: with a refusal naming the cause when the work is
// not done by then (fail closed), whatever the runtime does with late
// answers.
func TestAttackSlowRegistryRefusesBeforeRuntimeTimeout(t *testing.T) {
	adaptation.SetPluginRequestTimeout(800 * time.Millisecond)
	t.Cleanup(func() { adaptation.SetPluginRequestTimeout(adaptation.DefaultPluginRequestTimeout) })
	rs := newRuntime(t, "containerd")
	fake := newFake()
	fake.Block = make(chan struct{})
	runPlugin(t, rs, fake, nil)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	start := time.Now()
	_, err := rs.create(pod("agents", ann), ctr("s1", "a", 1))
	took := time.Since(start)
	close(fake.Block)
	if err == nil || !strings.Contains(err.Error(), "enforcerd: refusing") || !strings.Contains(err.Error(), "in time") {
		t.Fatalf("CreateContainer with a slow registry: %v (after %v), want the plugin's own refusal before the runtime's timeout", err, took)
	}
	if took >= 800*time.Millisecond {
		t.Errorf("answered after %v, not before the runtime's 800ms timeout", took)
	}
}
