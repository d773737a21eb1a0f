package progcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The "#!" line as fs/binfmt_script.c reads it.
func TestScriptInterpParsesLikeTheKernel(t *testing.T) {
	long := "#!/" + strings.Repeat("a", binprmBufSize) // the name is cut
	for _, c := range []struct {
		in   string
		want string // "" when the kernel refuses it as a script
	}{
		{"#!/bin/sh\necho\n", "/bin/sh"},
		{"#! /bin/sh -e\n", "/bin/sh"},
		{"#!\t/usr/bin/env python3\n", "/usr/bin/env"},
		{"#!/bin/sh", "/bin/sh"},                        // no newline, the whole file
		{"#!/bin/sh\x00junk\n", "/bin/sh"},              // a NUL ends the name
		{"#!/bin/sh\r\n", "/bin/sh\r"},                  // CR is part of the name
		{"#!   \n/bin/sh\n", ""},                        // no name on the first line
		{"#!", ""},                                      // nothing
		{"#!\n", ""},                                    // nothing
		{"# !/bin/sh\n", ""},                            // not "#!"
		{"\x7fELF", ""},                                 // not a script
		{long, ""},                                      // no newline, no end of the name: cut
		{"#!" + strings.Repeat(" ", binprmBufSize), ""}, // only blanks
		{"#!/bin/sh " + strings.Repeat("a", binprmBufSize), "/bin/sh"}, // the argument may be cut
	} {
		got, ok := scriptInterp(strings.NewReader(c.in))
		if ok != (c.want != "") || got != c.want {
			t.Errorf("scriptInterp(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// FuzzScriptInterp: any content yields a name without blanks, NUL or
// newline, or none.
func FuzzScriptInterp(f *testing.F) {
	f.Add([]byte("#!/bin/sh\n"))
	f.Add([]byte("#! /usr/bin/env python3 -u\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := scriptInterp(bytes.NewReader(b))
		if ok != (got != "") || strings.ContainsAny(got, " \t\n\x00") {
			t.Fatalf("scriptInterp(%q) = %q, %v", b, got, ok)
		}
	})
}

// scriptRoot is testRoot with scripts and programs with odd interpreters:
//
//	s/dash.sh     #!/bin/dash              (a login shell)
//	s/ls.sh       #! /bin/ls -l            (BusyBox by content)
//	s/ld.sh       #!/lib/ld-test.so.1      (a loader)
//	s/tool.sh     #!/sbin/tool             (a plain program)
//	s/chain.sh    #!/s/tool.sh             (a script, then a plain program)
//	s/loop.sh     #!/s/loop.sh             (itself)
//	s/rel.sh      #!tool                   (relative)
//	s/missing.sh  #!/no/such
//	s/stub.sh     #!/s/bbstub              (an ELF whose interpreter is BusyBox)
//	s/c0 ... c6   #!/s/c1 ... #!/sbin/tool (longer than the kernel follows)
//	s/bbstub      PT_INTERP /bin/bb
//	s/plainstub   PT_INTERP /sbin/tool     (a plain program, not a loader)
//	s/relstub     PT_INTERP lib/ld-test.so.1
//	s/nostub      PT_INTERP /no/such
//	s/fifostub    PT_INTERP /bin/fifo
//	s/fakeld      PT_INTERP /lib/ld-fake.so.2 (a loader's SONAME, BusyBox's markers)
//	s/muslapp     PT_INTERP /lib/ld-musl.so (musl's loader usage text, SONAME libc.so)
func scriptRoot(t *testing.T) string {
	t.Helper()
	d := testRoot(t)
	write := func(p string, b []byte) {
		t.Helper()
		p = filepath.Join(d, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, interp := range map[string]string{
		"dash.sh": "/bin/dash", "ls.sh": " /bin/ls -l", "ld.sh": "/lib/ld-test.so.1", "tool.sh": "/sbin/tool",
		"chain.sh": "/s/tool.sh", "loop.sh": "/s/loop.sh", "rel.sh": "tool", "missing.sh": "/no/such", "stub.sh": "/s/bbstub",
	} {
		write("s/"+name, []byte("#!"+interp+"\nexit 0\n"))
	}
	for i := range maxScriptDepth + 1 {
		write(fmt.Sprintf("s/c%d", i), []byte(fmt.Sprintf("#!/s/c%d\n", i+1)))
	}
	write(fmt.Sprintf("s/c%d", maxScriptDepth+1), []byte("#!/sbin/tool\n"))
	write("s/bbstub", fakeELF(t, "/bin/bb", ""))
	write("s/plainstub", fakeELF(t, "/sbin/tool", ""))
	write("s/relstub", fakeELF(t, "lib/ld-test.so.1", ""))
	write("s/nostub", fakeELF(t, "/no/such", ""))
	write("s/fifostub", fakeELF(t, "/bin/fifo", ""))
	write("lib/ld-fake.so.2", fakeELF(t, "", "ld-linux-x86-64.so.2", signature(ruleFor(t, "BusyBox"))))
	write("s/fakeld", fakeELF(t, "/lib/ld-fake.so.2", ""))
	write("lib/ld-musl.so", fakeELF(t, "", "libc.so", signature(ruleFor(t, "musl's loader"))))
	write("s/muslapp", fakeELF(t, "/lib/ld-musl.so", ""))
	return d
}

// A script is checked by its interpreter, which must be allowed and must
// not run other programs without exec; an ELF's program interpreter must
// be a dynamic loader by content.
func TestScriptsAndProgramInterpreters(t *testing.T) {
	r := openRoot(t, scriptRoot(t))
	for _, c := range []struct {
		name  string
		paths []string
		want  []Kind
		says  []string
	}{
		{"a shell as interpreter", []string{"/s/dash.sh"}, []Kind{Shell}, []string{"/bin/dash (the #! interpreter of /s/dash.sh)", "/etc/shells"}},
		{"BusyBox as interpreter", []string{"/s/ls.sh"}, []Kind{MultiCall}, []string{"/bin/ls (the #! interpreter of /s/ls.sh)", "BusyBox"}},
		{"BusyBox as interpreter, allowed too", []string{"/s/ls.sh", "/bin/ls"}, []Kind{MultiCall}, []string{"/bin/ls is a multi-call"}},
		{"the loader as interpreter", []string{"/s/ld.sh"}, []Kind{Loader}, []string{"/lib/ld-test.so.1 (the #! interpreter of /s/ld.sh)"}},
		{"a plain interpreter not allowed", []string{"/s/tool.sh"}, []Kind{UnallowedInterp}, []string{"/sbin/tool (the #! interpreter of /s/tool.sh)", "must itself be allowed"}},
		{"a plain interpreter allowed", []string{"/s/tool.sh", "/sbin/tool"}, nil, nil},
		{"a chain, neither allowed", []string{"/s/chain.sh"}, []Kind{UnallowedInterp, UnallowedInterp}, []string{
			"/sbin/tool (the #! interpreter of /s/tool.sh (the #! interpreter of /s/chain.sh))", "/s/tool.sh (the #! interpreter of /s/chain.sh)"}},
		{"a chain, the first allowed", []string{"/s/chain.sh", "/s/tool.sh"}, []Kind{UnallowedInterp}, []string{"/sbin/tool (the #! interpreter of /s/tool.sh)"}},
		{"a chain, both allowed", []string{"/s/chain.sh", "/s/tool.sh", "/sbin/tool"}, nil, nil},
		{"a relative interpreter", []string{"/s/rel.sh", "/sbin/tool"}, []Kind{UnallowedInterp}, []string{"relative"}},
		{"an interpreter whose interpreter is BusyBox", []string{"/s/stub.sh"}, []Kind{NonLoaderInterp}, []string{
			"/s/bbstub (the #! interpreter of /s/stub.sh)", "program interpreter /bin/bb is not a dynamic loader", "multi-call binary (BusyBox"}},
		{"PT_INTERP BusyBox", []string{"/s/bbstub"}, []Kind{NonLoaderInterp}, []string{"program interpreter /bin/bb is not a dynamic loader"}},
		{"PT_INTERP a plain program", []string{"/s/plainstub"}, []Kind{NonLoaderInterp}, []string{"program interpreter /sbin/tool is not a dynamic loader: no dynamic loader's DT_SONAME"}},
		// The program interpreter of a checked file is a loader (rule 2),
		// and not one by content (rule 7).
		{"PT_INTERP a plain program, allowed", []string{"/s/plainstub", "/sbin/tool"}, []Kind{NonLoaderInterp, Loader}, nil},
		{"PT_INTERP relative", []string{"/s/relstub"}, []Kind{NonLoaderInterp}, []string{"relative"}},
		{"PT_INTERP missing", []string{"/s/nostub"}, []Kind{NonLoaderInterp}, []string{"not found"}},
		{"PT_INTERP a FIFO", []string{"/s/fifostub"}, []Kind{NonLoaderInterp}, []string{"not a regular file"}},
		{"PT_INTERP a loader SONAME with BusyBox inside", []string{"/s/fakeld"}, []Kind{NonLoaderInterp}, []string{"multi-call"}},
		{"PT_INTERP a loader by its usage text", []string{"/s/muslapp"}, nil, nil},
		{"PT_INTERP a loader by its SONAME", []string{"/bin/app"}, nil, nil},
	} {
		err := r.Check(c.paths...)
		got := kinds(t, err)
		if strings.Join(kindStrings(got), ",") != strings.Join(kindStrings(c.want), ",") {
			t.Errorf("%s: %v: %v, want %v", c.name, c.paths, err, c.want)
			continue
		}
		for _, s := range c.says {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("%s: message %v does not say %q", c.name, err, s)
			}
		}
	}
	// A script that is its own interpreter is allowed as such; the kernel
	// gives up after five stages (ELOOP), nothing else runs.
	if err := r.Check("/s/loop.sh"); err != nil {
		t.Errorf("Check(/s/loop.sh) = %v", err)
	}
	// Fail closed: an interpreter that cannot be examined, or a chain
	// longer than the kernel follows.
	for _, p := range []string{"/s/missing.sh", "/s/c0"} {
		if err := r.Check(p); err == nil || errors.Is(err, ErrUnsafe) {
			t.Errorf("Check(%s) = %v, want an error", p, err)
		}
	}
}

// The daemon's vetting of a script entrypoint names the interpreter.
func TestProgramScriptEntrypoint(t *testing.T) {
	d := scriptRoot(t)
	if _, err := (Program{Path: "./dash.sh", Root: d, Cwd: "/s"}).Check(); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "/bin/dash") {
		t.Errorf("a #!/bin/dash entrypoint: %v, want ErrUnsafe naming /bin/dash", err)
	}
	if _, err := (Program{Path: "tool.sh", Root: d, EnvPath: "/s"}).Check(); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "must itself be allowed") {
		t.Errorf("a #!/sbin/tool entrypoint: %v, want ErrUnsafe: the interpreter is not allowed", err)
	}
}

// Every file a PATH lookup could pick is vetted, not only the first: a
// harmless program early in PATH does not hide BusyBox later in it (a
// runtime whose user may not execute the first, or that skips it for
// another reason, runs the second).
func TestEveryPATHCandidateIsVetted(t *testing.T) {
	d := testRoot(t)
	if err := os.MkdirAll(filepath.Join(d, "opt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "opt/ls"), fakeELF(t, "", "", []byte("a program")), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := Program{Path: "ls", Root: d, EnvPath: "/opt:/usr/bin:/bin:/sbin"}.Check()
	if res != "/opt/ls" || !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "/bin/ls") || strings.Contains(err.Error(), "/opt/ls") {
		t.Errorf("ls with PATH /opt:/usr/bin:/bin: %q, %v; want /opt/ls named, /bin/ls refused", res, err)
	}
	// The same file twice (a symlinked directory) is vetted once.
	if err := os.Symlink("bin", filepath.Join(d, "bin2")); err != nil {
		t.Fatal(err)
	}
	all, err := openRoot(t, d).Candidates("ls", "/opt:/bin:/bin2:/sbin", "")
	if err != nil || strings.Join(all, ",") != "/opt/ls,/bin/ls" {
		t.Errorf("Candidates = %v, %v; want /opt/ls,/bin/ls", all, err)
	}
	// A candidate that cannot be classified fails the check.
	big := filepath.Join(d, "sbin/ls")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.Write(fakeELF(t, "", ""))
	terr := f.Truncate(MaxScanBytes + 1) // sparse
	f.Close()
	if werr != nil || terr != nil {
		t.Fatal(werr, terr)
	}
	if _, err := (Program{Path: "ls", Root: d, EnvPath: "/opt:/sbin"}).Check(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("with a candidate too large to classify: %v, want ErrTooLarge", err)
	}
}
