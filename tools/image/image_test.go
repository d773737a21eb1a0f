package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a tiny static Go program: a real binary of the kind
// the image holds, without depending on bin/enforcerd being built.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "enforcerd")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GO111MODULE=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestArchiveContentsAndReproducible(t *testing.T) {
	bin := staticBinary(t)
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := Options{Binary: bin, Version: "v1.2.3", Revision: "abc123", Created: time.Unix(1700000000, 0).UTC()}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	da, err := WriteArchive(a, []string{"enforcerd:v1.2.3", "enforcerd:latest"}, o)
	if err != nil {
		t.Fatal(err)
	}
	db, err := WriteArchive(b, []string{"enforcerd:v1.2.3", "enforcerd:latest"}, o)
	if err != nil {
		t.Fatal(err)
	}
	// The digest is what a node pulls and runs; the archive's list of
	// tags for it comes in no fixed order.
	if da != db {
		t.Fatalf("two builds of one binary differ: %s vs %s", da, db)
	}

	var img v1.Image
	for _, tg := range []string{"enforcerd:v1.2.3", "enforcerd:latest"} {
		tag, err := name.NewTag(tg)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = tarball.ImageFromPath(a, &tag); err != nil {
			t.Fatalf("the archive does not load as a docker-archive image tagged %s: %v", tg, err)
		}
	}
	if d, err := img.Digest(); err != nil || d.String() != da {
		t.Fatalf("loaded digest %v (%v), WriteArchive said %s", d, err, da)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Time.Equal(o.Created) {
		t.Errorf("config os/arch/created = %s/%s/%v", cfg.OS, cfg.Architecture, cfg.Created)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != BinaryPath || strings.Join(cfg.Config.Cmd, " ") != "daemon" {
		t.Errorf("entrypoint %q cmd %q", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cfg.Config.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("labels %v", cfg.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}

	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = true
		if !h.ModTime.Equal(o.Created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		if h.Name == BinaryPath[1:] {
			got, _ := io.ReadAll(tr)
			if h.Mode&0o7777 != 0o755 || !bytes.Equal(got, want) {
				t.Errorf("%s: mode %o, %d bytes (want 0755 and the %d bytes of the binary)", h.Name, h.Mode, len(got), len(want))
			}
		}
	}
	for _, p := range []string{BinaryPath[1:], "etc/enforcerd"} {
		if !seen[p] {
			t.Errorf("the layer has no %s (has %v)", p, seen)
		}
	}
}

func TestRefusesWhatCannotRunInTheImage(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	cases := []struct {
		binary, tag, want string
	}{
		{"/bin/true", "enforcerd:x", "dynamically linked"},
		{notELF, "enforcerd:x", "not an ELF"},
		{filepath.Join(dir, "absent"), "enforcerd:x", "no such file"},
		{notELF, "Enforcerd:UPPER:bad", "--tag"},
	}
	for _, c := range cases {
		out := filepath.Join(dir, "out.tar")
		_, err := WriteArchive(out, []string{c.tag}, Options{Binary: c.binary})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one containing %q", c.binary, c.tag, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an archive was written despite the error", c.binary)
		}
	}
}
