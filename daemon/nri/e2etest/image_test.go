package e2etest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"runtime"
	"testing"
)

// testImage is the name the image is imported under and the pods use
// (also as the pinned sandbox image: no pause image, no registry).
const testImage = "docker.io/enforcerd/e2e:1"

// busyboxApplets are the /bin links of the test image.
var busyboxApplets = []string{"sh", "sleep", "wget", "touch", "echo", "ls", "cat"}

// writeImage writes to path an OCI image layout archive (what `ctr images
// import` reads) of one uncompressed layer: the static busybox at bb as
// /bin/busybox with busyboxApplets linked to it, /tmp, /etc. Its config
// runs /bin/sleep (the pod sandboxes' process) with PATH=/bin; the index
// names it testImage.
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

	type desc struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Platform    map[string]string `json:"platform,omitempty"`
	}
	blobs := map[string][]byte{}
	blob := func(mediaType string, b []byte) desc {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[hex.EncodeToString(sum[:])] = b
		return desc{MediaType: mediaType, Digest: d, Size: len(b)}
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	layerDesc := blob("application/vnd.oci.image.layer.v1.tar", layer.Bytes())
	cfg := blob("application/vnd.oci.image.config.v1+json", mustJSON(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Env": []string{"PATH=/bin"}, "Cmd": []string{"/bin/sleep", "1000000"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	}))
	manifest := blob("application/vnd.oci.image.manifest.v1+json", mustJSON(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": cfg, "layers": []desc{layerDesc},
	}))
	manifest.Annotations = map[string]string{"io.containerd.image.name": testImage, "org.opencontainers.image.ref.name": "1"}
	manifest.Platform = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
	index := mustJSON(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []desc{manifest},
	})

	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	file := func(name string, b []byte) {
		if err := aw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := aw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	file("index.json", index)
	for h, b := range blobs {
		file("blobs/sha256/"+h, b)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
