// Package image builds enforcerd's container image from the static binary
// with go-containerregistry, without a container engine. The image has one
// layer: the binary at BinaryPath (mode 0755, owner 0:0) and the empty
// directory /etc/enforcerd (the ConfigMap's mount point). Every time
// stamp is Options.Created, so one binary always gives one digest.
//
// Layering (docs/design.md): a tool; it may import anything, and only cmd/
// and tools/ import it.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BinaryPath is where the image holds enforcerd; its directory is on the
// image's PATH, so the DaemonSet runs "enforcerd ...".
const BinaryPath = "/usr/local/bin/enforcerd"

// Options describe the image.
type Options struct {
	// Binary is the host path of the enforcerd binary. It must be a
	// statically linked x86-64 or arm64 ELF executable (the image has no
	// C library and no loader).
	Binary string
	// Version and Revision become the org.opencontainers.image.version
	// and .revision labels when set.
	Version, Revision string
	// Created stamps the image config, its history and every file in
	// the layer.
	Created time.Time
}

// Build returns the image. Errors: the binary cannot be read, or is not a
// static ELF executable for a supported architecture.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	arch, err := staticArch(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Binary, err)
	}
	layerTar, err := layerBytes(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "enforcerd cmd/image: " + BinaryPath, Comment: "the static enforcerd binary"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = arch, "linux", created
	labels := map[string]string{
		"org.opencontainers.image.title":       "enforcerd",
		"org.opencontainers.image.description": "eBPF enforcer of AI-agent container ceilings (network, write, shell)",
		"org.opencontainers.image.licenses":    "Apache-2.0 AND GPL-2.0-only",
	}
	if o.Version != "" {
		labels["org.opencontainers.image.version"] = o.Version
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	cfg.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"daemon"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     labels,
		User:       "0:0",
		WorkingDir: "/",
	}
	return mutate.ConfigFile(img, cfg)
}

// WriteArchive builds the image and writes it to path as a docker-archive
// tarball with one or more tags (e.g. "enforcerd:v1.2.0",
// "enforcerd:latest"), through a temporary file renamed into place. It
// returns the image digest ("sha256:..."). Errors: no tag, a malformed
// tag, Build's, or writing.
func WriteArchive(path string, tags []string, o Options) (string, error) {
	if len(tags) == 0 {
		return "", errors.New("no --tag")
	}
	refs := map[name.Reference]v1.Image{}
	for _, tag := range tags {
		ref, err := name.NewTag(tag)
		if err != nil {
			return "", fmt.Errorf("--tag %q: %w", tag, err)
		}
		refs[ref] = nil
	}
	img, err := Build(o)
	if err != nil {
		return "", err
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".enforcerd-image-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	for ref := range refs {
		refs[ref] = img
	}
	if err := tarball.MultiRefWrite(refs, tmp); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return digest.String(), os.Rename(tmp.Name(), path)
}

// staticArch returns the OCI architecture of a statically linked ELF
// executable, or an error naming why the file does not fit the image.
func staticArch(bin []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("ELF type %s is not an executable", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", errors.New("dynamically linked (it has a PT_INTERP loader); build it with CGO_ENABLED=0 (make build)")
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	default:
		return "", fmt.Errorf("ELF machine %s is not supported (amd64, arm64)", f.Machine)
	}
}

// layerBytes is the layer's uncompressed tar: the directories down to the
// binary, the binary, and /etc/enforcerd.
func layerBytes(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	for _, d := range []string{"etc", "etc/enforcerd", "usr", "usr/local", "usr/local/bin"} {
		if err := dir(d); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: BinaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
