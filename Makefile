# enforcerd — see README.md. Every target installs what it needs (as root).
SHELL := /bin/bash
GO ?= go
KERNEL ?= 6.12
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN := bin/enforcerd

.PHONY: all build generate lint unit test vmtest vmtest-all vmtest-selftest demo bench deps clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/enforcerd

# Rebuild the eBPF objects and their Go bindings (needs clang, bpftool).
generate:
	scripts/setup-deps --bpf
	$(GO) generate ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Unit tests and native kernel tests (cgroup-BPF works natively as root).
unit:
	$(GO) test -count=1 ./...

deps:
	scripts/setup-deps

# Kernel tests inside a QEMU VM (KERNEL=6.12 or 6.1; see scripts/vmtest --help):
# the full suite with BPF LSM active, then a boot without "bpf" in lsm= that
# runs only the TestNoBPFLSM... tests.
NO_BPF_LSM := lockdown,capability,landlock,yama
vmtest: deps
	scripts/vmtest --kernel $(KERNEL)
	scripts/vmtest --kernel $(KERNEL) --lsm $(NO_BPF_LSM)

vmtest-all: deps
	$(MAKE) vmtest KERNEL=6.12
	$(MAKE) vmtest KERNEL=6.1

# Proves the harness fails on a failing or skipping guest test (~10 s).
vmtest-selftest: deps
	scripts/vmtest --kernel $(KERNEL) --selftest

test: deps lint unit vmtest-selftest vmtest

demo: deps build
	scripts/demo

bench: deps build
	scripts/bench

clean:
	rm -rf bin .vmtest
