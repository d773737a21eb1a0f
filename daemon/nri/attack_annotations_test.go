package nri

import (
	"errors"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/oci"
)

// TestAttackScopedNameNeverAContainer: a container-scoped key whose
// name no Kubernetes container can have (container names are RFC 1123
// labels: lower case, digits, '-', at most 63) can never narrow any
// container: the narrowing the pod's author or reviewer reads in it
// silently does not exist, and every container runs with the pod-wide
// ceiling. It is refused like an unknown key.
func TestAttackScopedNameNeverAContainer(t *testing.T) {
	for _, name := range []string{"Agent", "AGENT", "agent_1", "agent.x", "-agent", "agent-", "ａgent", strings.Repeat("a", 64)} {
		ann := map[string]string{
			"enforcerd.io/ceiling":                   "network=true",
			"ceiling.enforcerd.io/container." + name: "network=false",
		}
		if p, err := ParsePod(ann, "agent"); err == nil || !errors.Is(err, oci.ErrBadAnnotation) {
			t.Errorf("scoped name %q: accepted %+v (%v)", name, p, err)
		}
	}
	ok := map[string]string{"enforcerd.io/ceiling": "network=true", "ceiling.enforcerd.io/container.a-1": "network=false"}
	if p, err := ParsePod(ok, "a-1"); err != nil || p.Req.Ceiling != "network=false,write=true,shell=full,tools=true,depth=1" {
		t.Errorf("valid scoped name: %+v, %v", p, err)
	}
}

// TestAttackLongValueRefusalIsShort: a refused annotation value of
// hundreds of KiB (Kubernetes allows 256 KiB of annotations) is not
// echoed whole into the error the runtime logs and reports on every
// retry of the pod (and the daemon's own log): the refusal names the key
// and is clipped.
func TestAttackLongValueRefusalIsShort(t *testing.T) {
	rs := newRuntime(t, "containerd")
	runPlugin(t, rs, newFake(), nil)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": strings.Repeat("tcp:10.0.0.1:443,", 14000)}
	_, err := rs.create(pod("agents", ann), ctr("l1", "a", 1))
	if err == nil || !strings.Contains(err.Error(), "enforcerd.io/allow-connect") {
		t.Fatalf("CreateContainer: %v", err)
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("refusal of %d bytes, want at most 4096", n)
	}
}
