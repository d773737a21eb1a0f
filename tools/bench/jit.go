package bench

import (
	"bufio"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/enforcer"
)

// jitLinePrefix starts each program's line of the "jit" subcommand:
// "JIT <name> funcs=<len>,<len>... <base64 of the machine code>".
const jitLinePrefix = "JIT "

// JIT is the "jit" subcommand, a diagnosis of what a program run costs:
// inside a scripts/vmtest guest it loads enforcerd (enforcer.Open, as
// "load" does) and prints, for each of its programs whose name (as the
// kernel keeps it, at most 15 characters) starts with one of -progs, the
// machine code the kernel's JIT made of it, one line each (jitLinePrefix;
// funcs: the byte length of the program and of each subprogram, in
// order); with -split LOG it reads such lines from a console log instead
// (carriage returns allowed) and writes <dir>/<name>.bin (raw x86-64,
// for `objdump -D -b binary -mi386:x86-64`) and <dir>/<name>.funcs.
// Errors: a program that cannot be read, no program matched, a log with
// no such line.
func JIT(args []string) error {
	fs := flag.NewFlagSet("jit", flag.ContinueOnError)
	progs := fs.String("progs", "inode_permissio,file_permissio,file_open,mmap_file,socket_sendms,socket_recvms,task_kill,ipc_permission",
		"program name prefixes, comma-separated (\"\": every program of enforcerd's)")
	pin := fs.String("pin", enforcer.DefaultPinDir, "pin directory (guest)")
	split := fs.String("split", "", "a console log of a guest run: write its programs to -dir instead (host)")
	dir := fs.String("dir", ".", "where -split writes <name>.bin and <name>.funcs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *split != "" {
		return splitJIT(*split, *dir)
	}
	if os.Getenv("ENFORCERD_VMTEST") != "1" {
		return errors.New("jit: loads enforcerd's programs: run it inside a scripts/vmtest guest (ENFORCERD_VMTEST=1 is not set), or give -split LOG")
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: *pin})
	if err != nil {
		return err
	}
	defer enf.Close()
	n, err := dumpJIT(os.Stdout, strings.Split(*progs, ","))
	if err == nil && n == 0 {
		err = fmt.Errorf("jit: no loaded program's name starts with one of %q", *progs)
	}
	return err
}

// dumpJIT writes the line of every loaded program whose name starts with
// one of prefixes, and returns how many it wrote.
func dumpJIT(w io.Writer, prefixes []string) (int, error) {
	n := 0
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // unloaded meanwhile
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			return n, fmt.Errorf("jit: program %d: %w", id, err)
		}
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(info.Name, p) }) {
			continue
		}
		code, ok := info.JitedInsns()
		if !ok || len(code) == 0 {
			return n, fmt.Errorf("jit: program %s: no machine code (JIT off, or bpf_jit_kallsyms hides it)", info.Name)
		}
		lens, _ := info.JitedFuncLens()
		funcs := make([]string, len(lens))
		for i, l := range lens {
			funcs[i] = fmt.Sprint(l)
		}
		fmt.Fprintf(w, "%s%s funcs=%s %s\n", jitLinePrefix, info.Name, strings.Join(funcs, ","), base64.StdEncoding.EncodeToString(code))
		n++
	}
}

// splitJIT writes the programs of a log's jit lines to dir.
func splitJIT(log, dir string) error {
	f, err := os.Open(log)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		i := strings.Index(line, jitLinePrefix)
		if i < 0 {
			continue
		}
		fields := strings.Fields(line[i+len(jitLinePrefix):])
		if len(fields) != 3 || !strings.HasPrefix(fields[1], "funcs=") {
			return fmt.Errorf("jit: %s: malformed line %q", log, line)
		}
		code, err := base64.StdEncoding.DecodeString(fields[2])
		if err != nil {
			return fmt.Errorf("jit: %s: program %s: %w", log, fields[0], err)
		}
		base := filepath.Join(dir, fields[0])
		if err := os.WriteFile(base+".bin", code, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(base+".funcs", []byte(strings.TrimPrefix(fields[1], "funcs=")+"\n"), 0o644); err != nil {
			return err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("jit: %s has no %q line", log, jitLinePrefix)
	}
	return nil
}
