package e2etest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/tools/image"
)

// daemonImage is the name the DaemonSet's image (tools/image, `make
// image`) is imported under.
const daemonImage = "docker.io/enforcerd/enforcerd:e2e"

// checkDaemonImage builds the DaemonSet's image from the binary under
// test as `make image` does, imports the docker-archive with `ctr images
// import` (what a node without a registry does), and runs `enforcerd
// version` from it as a CRI container: the image loads, unpacks and runs
// in containerd, and its binary is the one built.
func (e *env) checkDaemonImage() {
	e.t.Helper()
	archive := filepath.Join(e.dir, "enforcerd-image.tar")
	if _, err := image.WriteArchive(archive, []string{daemonImage}, image.Options{Binary: e.bin, Created: time.Unix(0, 0)}); err != nil {
		e.t.Fatalf("building the DaemonSet's image: %v", err)
	}
	if out, err := execOut(e.criBin("ctr"), "--address", e.ctrdSock, "-n", "k8s.io", "images", "import", "--local",
		"--snapshotter", "native", "--platform", "linux/"+runtime.GOARCH, archive); err != nil {
		e.t.Fatalf("ctr images import of the DaemonSet's image: %v\n%s", err, out)
	}
	p := e.runPod("image", nil, "true")
	p.setImage(daemonImage, []string{"enforcerd", "version"})
	if out, err := p.create(); err != nil {
		e.t.Fatalf("crictl create from the DaemonSet's image: %v\n%s", err, out)
	}
	e.crictl("start", p.ctr)
	want, err := execOut(e.bin, "version")
	if err != nil {
		e.t.Fatal(err)
	}
	var log string
	e.waitFor(60*time.Second, "`enforcerd version` in the DaemonSet's image", func() bool {
		log = p.log()
		return strings.Contains(log, "enforcerd ")
	})
	if strings.TrimSpace(log) != strings.TrimSpace(want) {
		e.t.Fatalf("enforcerd version in the image printed %q, the binary under test %q", log, want)
	}
	p.remove()
}

// execOut runs name with args and returns its combined output.
func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// setImage makes the pod's container run argv from img, with the image's
// own environment (PATH included).
func (p *pod) setImage(img string, argv []string) {
	p.e.t.Helper()
	p.e.writeJSON(p.ctrCfg, map[string]any{
		"metadata": map[string]any{"name": "agent"},
		"image":    map[string]any{"image": img},
		"command":  argv,
		"log_path": "agent.log",
	})
}
