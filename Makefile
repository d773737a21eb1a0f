# enforcerd — see README.md. Every target installs what it needs (as root).
SHELL := /bin/bash
GO ?= go
KERNEL ?= 6.12
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN := bin/enforcerd

.PHONY: all help build image dist man generate generate-check lint unit check test vmtest vmtest-debian vmtest-all vmtest-selftest vmtest-compat vmtest-compat-whole vmtest-compat-subset compat-doc demo bench deps clean

# A target's line ends in "## what it does", the line `make help` prints.
all: build man ## build bin/enforcerd and the man pages (the default)

help: ## list the targets and what they do
	@awk -F ':.*## ' '/^[a-zA-Z_-]+:.*## / { printf "  %-21s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

# The version `enforcerd version` prints and enforcerd_build_info carries
# (internal/buildinfo): git describe, the commit, its branch, the build time.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
BRANCH ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
# The build date is the commit's: one commit builds one binary (and one
# `make image` digest); a tree with local changes gets the current time.
BUILD_DATE ?= $(shell if git diff --quiet HEAD 2>/dev/null; then TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd; else date -u +%Y-%m-%dT%H:%M:%SZ; fi)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) \
	-X $(VERSION_PKG).Branch=$(BRANCH) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)

build: ## bin/enforcerd, static
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/enforcerd

# The DaemonSet's container image, without a container engine: the static
# binary in one layer, as a docker-archive tarball (cmd/image, with
# github.com/google/go-containerregistry). Load it with `docker load`,
# `podman load` or `ctr -n k8s.io images import`, or push it.
IMAGE_TAG ?= $(VERSION)
image: build ## the DaemonSet's image as a docker-archive tarball in bin/
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) $(GO) run ./cmd/image \
		--binary $(BIN) --tag enforcerd:$(IMAGE_TAG) --tag enforcerd:latest --version $(VERSION) --revision $(REVISION) --out bin/enforcerd-image.tar

# The release tarball, the Debian package (lintian must pass) and their
# SHA-256 files in dist/ (scripts/dist --help).
dist: ## the release tarball, the Debian package and their .sha256 in dist/
	scripts/setup-deps --lint
	scripts/dist
# The man pages man/enforcerd*.1, one per command and ctl subcommand, from
# the command tree (github.com/spf13/cobra/doc over each command's help
# text; cmd/enforcerd/man_test.go). Dated by the last commit.
MANDIR ?= $(CURDIR)/man
man: ## man/enforcerd*.1 from the commands' help texts
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) ENFORCERD_MAN_DIR=$(MANDIR) \
		$(GO) test -count=1 -ldflags '$(LDFLAGS)' -run '^TestManPages$$' ./cmd/enforcerd

# Rebuild the eBPF objects and their Go bindings (needs clang, bpftool); the
# last go:generate step rewrites bpf/objects.sum, the record of what they were
# built from that `make unit` checks (bpf/objects_test.go, tools/bpfsum).
generate: ## rebuild the eBPF objects (clang), their bindings and bpf/objects.sum
	scripts/setup-deps --bpf
	$(GO) generate ./...

# Regenerate the eBPF objects in a scratch copy of the tree and compare them
# byte for byte with the committed ones. Meaningful with the toolchain
# bpf/objects.sum records (Debian 12's clang 14 and libbpf-dev); another
# clang version builds other bytes, and the check then names both.
generate-check: ## regenerate the eBPF objects in a scratch copy, compare byte for byte
	scripts/setup-deps --bpf
	$(GO) run ./cmd/bpfsum regen bpf

# Product Go: the tracked non-test, non-generated Go outside the test
# harnesses (test/ and the folders named *test), the tools
# (tools/, the mains under cmd/ other than cmd/enforcerd) and scripts/, as
# docs/design.md's layering table sorts them. No function of it is longer
# than 80 lines (cmd/funclen) or of cyclomatic complexity over 20 (gocyclo).
PRODUCT_GO = $(shell { git ls-files -- '*.go' ':(exclude)test/' ':(exclude,glob)**/*test/**' \
	':(exclude)tools/' ':(exclude)scripts/' ':(exclude)cmd/'; \
	git ls-files -- 'cmd/enforcerd/*.go'; } | grep -v '_test\.go$$' | xargs grep -L '^// Code generated .* DO NOT EDIT\.$$')

# Shell scripts are the tracked files whose first line is a sh or bash shebang.
# deadcode and gocyclo are the versions go.mod's tool lines pin (go tool);
# deadcode leaves generated files (the bpf2go bindings) out and must find
# nothing: no function of the module unreachable from its mains and tests.
lint: ## gofmt, go vet, staticcheck, deadcode, shellcheck, gocyclo, function length
	scripts/setup-deps --lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags failpoint ./daemon/registry/ ./daemon/state/ ./internal/failpoint/
	$(GO) run $(STATICCHECK) ./...
	@echo "$(GO) tool deadcode -test ./..."; out=$$($(GO) tool deadcode -test ./...) || exit 1; \
		if [ -n "$$out" ]; then echo "$$out"; echo "deadcode: unreachable functions (remove them)"; exit 1; fi
	@files=$$(git ls-files -z | xargs -0 awk 'FNR == 1 && /^#!(.*\/|.*env +)(ba|da)?sh( |$$)/ { print FILENAME } { nextfile }'); \
		echo shellcheck $$files; shellcheck $$files
	@rc=0; echo "$(GO) tool gocyclo -over 20 PRODUCT_GO"; $(GO) tool gocyclo -over 20 $(PRODUCT_GO) || rc=1; \
		echo "$(GO) run ./cmd/funclen -over 80 PRODUCT_GO"; $(GO) run ./cmd/funclen -over 80 $(PRODUCT_GO) || rc=1; \
		[ $$rc = 0 ] || echo "lint: product functions over the size limits: cut them into named steps (docs/design.md, Layering)"; exit $$rc

# Unit tests and native kernel tests (cgroup-BPF works natively as root);
# then the crash-point sweep, whose failpoints exist only with the
# failpoint build tag (internal/failpoint).
unit: ## unit tests and native kernel tests (root for cgroup-BPF), then the crash-point sweep
	@[ "$$(id -u)" = 0 ] || echo "unit: running as uid $$(id -u): the native kernel tests (cgroup-BPF) skip; run as root to include them"
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags failpoint -run 'CrashSweep|Arm' ./daemon/registry/ ./internal/failpoint/

# lint and unit, no VM: what to run before sending a change.
check: lint unit ## the fast checks: lint, then unit (no VM)

deps: ## what the tests need: apt packages, kernels, containerd, and what builds the Debian guest's image
	scripts/setup-deps --vm --rootfs

# Kernel tests inside a QEMU VM (KERNEL=6.12 or 6.1; see scripts/vmtest --help):
# the full suite with BPF LSM active, then a boot without "bpf" in lsm= that
# runs only the TestNoBPFLSM... tests, then the Debian guest's tests.
NO_BPF_LSM := lockdown,capability,landlock,yama
vmtest: deps ## kernel tests in QEMU (KERNEL=6.12|6.1), with and without bpf in lsm=, the Debian guest's and the compatibility suite
	scripts/vmtest --kernel $(KERNEL)
	scripts/vmtest --kernel $(KERNEL) --lsm $(NO_BPF_LSM)
	$(MAKE) vmtest-debian KERNEL=$(KERNEL)
	$(MAKE) vmtest-compat-$(if $(filter 6.12,$(KERNEL)),whole,subset) KERNEL=$(KERNEL)

# The tests that need systemd as PID 1, auditd and the shipped units (names
# matching vmtest.DebianGuestPattern; the initramfs guest leaves them out):
# one boot of the Debian 12 image (scripts/rootfs builds it on a cache miss;
# CI caches ~/.cache/enforcerd/rootfs/$$(scripts/rootfs --key)).
DEBIAN_GUEST_TESTS := SystemdUnit|AuditTrail
vmtest-debian: deps ## the Debian guest's tests (systemd as PID 1, auditd) in QEMU (KERNEL=6.12|6.1)
	scripts/vmtest --rootfs debian --kernel $(KERNEL) --tests '$(DEBIAN_GUEST_TESTS)'

vmtest-all: deps ## make vmtest on both kernels, and the whole compatibility suite on 6.1 too
	$(MAKE) vmtest KERNEL=6.12
	$(MAKE) vmtest KERNEL=6.1
	$(MAKE) vmtest-compat KERNEL=6.1

# The compatibility suite (test/compat): unmodified tools under every role's
# ceiling in the Debian guest (scripts/rootfs builds its image once, cached),
# and the cells of test/compat's OCITools x OCIRoles once more through a
# daemon and the OCI hook with runc (TestCompatOCI). make vmtest runs all of
# it on 6.12 (vmtest-compat-whole) and the tools of COMPAT_SUBSET on 6.1
# (vmtest-compat-subset, without the OCI run): what the other kernel's rules
# could treat differently (file creation and renames beneath a write root,
# locks under write=false, /dev/shm, ptys, unix sockets, /proc and /sys),
# leaving out the tools whose cost is user space under TCG (pip, gcc, go
# build, npm, the xargs pool, archives, searches).
# CI's budget for both is 10 minutes, boots included. Measured by .ci/run on
# an idle 2-core machine (TCG): the whole suite with its OCI run on 6.12 in
# 438 s, boot included; the 6.1 subset in 194 s in the VM (beside two
# other VM runs). The suite is
# single-threaded user space under single-threaded TCG (cells cannot run in
# parallel: concurrent enforcerd runs split the ring buffer's records), so
# go build, npm and the venv set its floor.
COMPAT_SUBSET := git,python-mp,sqlite-write,sqlite-read,flock,pty,tmux,sysfiles
vmtest-compat: deps ## the compatibility suite and its OCI run in the Debian guest (KERNEL=6.12|6.1)
	scripts/vmtest --rootfs debian --kernel $(KERNEL) --pkg test/compat

vmtest-compat-whole: vmtest-compat

vmtest-compat-subset: deps ## the compatibility suite's tools in COMPAT_SUBSET (KERNEL=6.12|6.1)
	scripts/vmtest --rootfs debian --kernel $(KERNEL) --pkg test/compat --with-tests \
		--run 'cd /t/test/compat && ./compat.test -test.v -test.run "^TestCompat$$" -compat.tools=$(COMPAT_SUBSET)'

# docs/compatibility.md from a run of the whole suite on each kernel.
compat-doc: deps ## run the compatibility suite on 6.12 and 6.1, regenerate docs/compatibility.md
	mkdir -p .vmtest
	set -o pipefail; scripts/vmtest --rootfs debian --kernel 6.12 --pkg test/compat | tee .vmtest/compat-6.12.log
	set -o pipefail; scripts/vmtest --rootfs debian --kernel 6.1 --pkg test/compat | tee .vmtest/compat-6.1.log
	$(GO) run ./cmd/compat-doc -o docs/compatibility.md 6.12=.vmtest/compat-6.12.log 6.1=.vmtest/compat-6.1.log

# Proves the harness fails on a failing or skipping guest test (~10 s).
vmtest-selftest: deps ## prove the VM harness fails a failing or skipping guest test
	scripts/vmtest --kernel $(KERNEL) --selftest

test: deps lint unit vmtest-selftest vmtest ## everything: lint, unit, the harness selftest and the VM suite

demo: ## the demo: an agent under each role's ceiling (scripts/demo builds itself)
	scripts/setup-deps --demo
	scripts/demo

bench: deps build ## cost of enforcement (root; scripts/bench --help)
	scripts/bench

clean: ## remove build outputs
	rm -rf bin .vmtest man dist
