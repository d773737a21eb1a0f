// Package buildinfo is the one source of enforcerd's version: what
// `enforcerd version` prints and what the metric enforcerd_build_info
// carries.
//
// The values live in github.com/prometheus/common/version, the package
// whose variables client_golang's version collector reads, so the command
// and the metric can never disagree. The Makefile sets them at link time:
//
//	-X github.com/prometheus/common/version.Version=$(VERSION)       (git describe)
//	-X github.com/prometheus/common/version.Revision=$(REVISION)     (commit hash)
//	-X github.com/prometheus/common/version.BuildDate=$(BUILD_DATE)  (RFC 3339, UTC)
//	-X github.com/prometheus/common/version.Branch=$(BRANCH)
//
// A binary built without them (go build, go install) takes what the Go
// toolchain recorded (runtime/debug.ReadBuildInfo): the module version
// ("(devel)" for a work tree), the VCS revision and commit time, and
// whether the tree was modified.
//
// Layering (docs/design.md): layer 0; it may import nothing else of the
// module, and of other modules no cilium/ebpf, not even through its
// imports.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// Info is the build of the running binary. Fields are empty when unknown.
type Info struct {
	// Version: a release tag (v1.2.3), a git describe string, or the
	// module version the toolchain recorded ("(devel)" for a work tree).
	Version string `json:"version"`
	// Revision: the VCS commit hash, with "-modified" when the tree had
	// uncommitted changes ("unknown" when not recorded).
	Revision string `json:"revision"`
	// Branch: the VCS branch, when the Makefile set it.
	Branch string `json:"branch,omitempty"`
	// BuildDate: the build time set by the Makefile, else the commit time
	// (RFC 3339).
	BuildDate string `json:"build_date"`
	// GoVersion: the toolchain, e.g. "go1.24.2".
	GoVersion string `json:"go_version"`
	// Platform: GOOS/GOARCH.
	Platform string `json:"platform"`
}

func init() {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	// The revision needs nothing here: version.GetRevision falls back to
	// the toolchain's vcs.revision (with "-modified") by itself.
	if version.Version == "" {
		version.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" && version.BuildDate == "" {
			version.BuildDate = s.Value
		}
	}
}

// Get returns the running binary's build.
func Get() Info {
	return Info{
		Version:   version.Version,
		Revision:  version.GetRevision(),
		Branch:    version.Branch,
		BuildDate: version.BuildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String is the one-line form: "VERSION (revision REV, built DATE, GO
// PLATFORM)", with "unknown" for what is not known.
func (i Info) String() string {
	or := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	var b strings.Builder
	b.WriteString(or(i.Version))
	b.WriteString(" (revision ")
	b.WriteString(or(i.Revision))
	b.WriteString(", built ")
	b.WriteString(or(i.BuildDate))
	b.WriteString(", ")
	b.WriteString(i.GoVersion)
	b.WriteString(" ")
	b.WriteString(i.Platform)
	b.WriteString(")")
	return b.String()
}
