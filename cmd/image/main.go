// Command image builds enforcerd's container image (for the Kubernetes
// DaemonSet) from the static binary, without a container engine: one
// layer holding the binary, written as a docker-archive tarball that
// `docker load`, `podman load` and `ctr -n k8s.io images import` accept.
//
//	go run ./cmd/image --binary bin/enforcerd --tag enforcerd:VERSION --tag enforcerd:latest --out bin/enforcerd-image.tar
//
// The image is reproducible: every time stamp is --epoch (default
// SOURCE_DATE_EPOCH, else 0), so the same binary gives the same digest.
// It prints the image's digest; the Makefile's `image` target runs it.
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/tools/image"
)

func main() {
	var o image.Options
	var out string
	var tags tagList
	var epoch int64
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			fmt.Fprintf(os.Stderr, "image: SOURCE_DATE_EPOCH=%q is not a non-negative number of seconds\n", s)
			os.Exit(2)
		}
		epoch = v
	}
	flag.StringVar(&o.Binary, "binary", "bin/enforcerd", "the static enforcerd `binary` to put in the image")
	flag.Var(&tags, "tag", "a `name:tag` of the image in the archive (repeatable; default enforcerd:latest)")
	flag.StringVar(&out, "out", "bin/enforcerd-image.tar", "the docker-archive `file` to write")
	flag.StringVar(&o.Version, "version", "", "the org.opencontainers.image.version label")
	flag.StringVar(&o.Revision, "revision", "", "the org.opencontainers.image.revision label (VCS commit)")
	flag.Int64Var(&epoch, "epoch", epoch, "the image's time stamps, in `seconds` since 1970 (default SOURCE_DATE_EPOCH, else 0)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/image [flags]\n\nBuilds enforcerd's container image from the static binary (no container engine).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "image: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if epoch < 0 {
		fmt.Fprintf(os.Stderr, "image: --epoch %d is negative\n", epoch)
		os.Exit(2)
	}
	o.Created = time.Unix(epoch, 0).UTC()
	if len(tags) == 0 {
		tags = tagList{"enforcerd:latest"}
	}
	digest, err := image.WriteArchive(out, tags, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("image: %s %s -> %s\n", strings.Join(tags, " "), digest, out)
}

// tagList is the repeatable --tag flag.
type tagList []string

func (t *tagList) String() string     { return strings.Join(*t, ",") }
func (t *tagList) Set(v string) error { *t = append(*t, v); return nil }
