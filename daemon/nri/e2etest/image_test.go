package e2etest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testImage is the name the image is imported under and the pods use
// (also as the pinned sandbox image: no pause image, no registry).
const testImage = "docker.io/enforcerd/e2e:1"

// busyboxApplets are the /bin links of the test image.
var busyboxApplets = []string{"sh", "sleep", "wget", "touch", "echo", "ls", "cat"}

// writeImage writes to path a docker-archive (what `ctr images import`
// reads; built with go-containerregistry, as `make image` builds the
// DaemonSet's) of one layer: the static busybox at bb as
// /bin/busybox with busyboxApplets linked to it, /tmp, /etc. Its config
// runs /bin/sleep (the pod sandboxes' process) with PATH=/bin; the archive
// tags it testImage.
func writeImage(t *testing.T, path, bb string) {
	t.Helper()
	bin, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	add := func(h *tar.Header, body []byte) {
		h.Uname, h.Gname = "root", "root"
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"bin/", "etc/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		add(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}, nil)
	}
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))}, bin)
	for _, a := range busyboxApplets {
		add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}, nil)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	lt := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(lt)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux"
	cfg.Config = v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"/bin/sleep", "1000000"}}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(testImage)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tarball.Write(tag, img, &out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
