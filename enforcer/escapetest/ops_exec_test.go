package escapetest

// Probe operations of the exec cases (exec_test.go): programs run by the
// probe, copies of this binary, memfds and files the sandbox wrote.
// test/probe's exec runs a program.

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func copyFile(dst io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(dst, in)
	return err
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		"noop": func(r *probe.Result, a []string) {},
		"sleep": func(r *probe.Result, a []string) {
			time.Sleep(60 * time.Second)
		},
		// exec-probe PATH: run a copy of this binary as a noop probe.
		"exec-probe": func(r *probe.Result, a []string) {
			probe.RunProgram(r, a, probe.Env("noop"), nil)
		},
		// exec-probe-op PATH OP ARGS...: run a copy of this binary as probe OP;
		// the inner result is reported as this one.
		"exec-probe-op": func(r *probe.Result, a []string) {
			probe.RunProgram(r, []string{a[0]}, probe.Env(a[1], a[2:]...), nil)
			if r.Errno != 0 || r.Setup != "" {
				return
			}
			inner, err := probe.ParseResult([]byte(r.Out))
			if err != nil {
				r.Setup = fmt.Sprintf("inner probe: %v: %q", err, r.Out)
				return
			}
			*r = inner
		},
		// memfd-exec SRC: copy SRC into a memfd, exec it through /proc/self/fd.
		"memfd-exec": func(r *probe.Result, a []string) {
			fd, err := unix.MemfdCreate("escapetest", 0)
			if !r.Require(err, "memfd_create") {
				return
			}
			f := os.NewFile(uintptr(fd), "memfd")
			if !r.Require(copyFile(f, a[0]), "copy into memfd") {
				return
			}
			probe.RunProgram(r, []string{"/proc/self/fd/3"}, probe.Env("noop"), []*os.File{f})
		},
		// copy-exec SRC DST: write a copy of SRC to DST (opened for write by
		// this process), then exec it as a noop probe.
		"copy-exec": func(r *probe.Result, a []string) {
			f, err := os.OpenFile(a[1], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			if !r.Require(err, "create copy") {
				return
			}
			err = copyFile(f, a[0])
			f.Close()
			if !r.Require(err, "write copy") {
				return
			}
			probe.RunProgram(r, []string{a[1]}, probe.Env("noop"), nil)
		},
		// fd-write-exec SRC DST ARGS...: write SRC through the inherited writable
		// descriptor 3 (open on DST), then exec DST ARGS.
		"fd-write-exec": func(r *probe.Result, a []string) {
			f := os.NewFile(3, "inherited")
			if _, err := f.Seek(0, 0); !r.Require(err, "seek fd 3") {
				return
			}
			err := copyFile(f, a[0])
			f.Close()
			if !r.Require(err, "write through fd 3") {
				return
			}
			// The parent closes its copy of fd 3 just after starting this
			// probe; until it has, exec fails with ETXTBSY before any LSM
			// hook runs. Wait for that instead of testing nothing.
			for i := 0; i < 100; i++ {
				*r = probe.Result{Op: r.Op, Exit: -1}
				probe.RunProgram(r, a[1:], probe.Env("noop"), nil)
				if r.Errno != syscall.ETXTBSY {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
	})
}
