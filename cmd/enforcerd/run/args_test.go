package run

// run's command line: flags, "--", roles, and the exit codes of a bad one.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/testroot"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// parseRunArgs parses run's arguments as "enforcerd run" does, without
// running anything. run refuses a non-root user before it hands on what it
// parsed, so the test is skipped then.
func parseRunArgs(t *testing.T, args []string) (o runOptions, stderr string, err error) {
	t.Helper()
	testroot.Require(t, "enforcerd run refuses a non-root user before it hands on its parsed flags")
	var errb bytes.Buffer
	called := false
	s := cli.Streams{In: strings.NewReader(""), Out: &errb, Err: &errb}
	code := cli.ExecuteCommands(append([]string{"run"}, args...), s,
		NewCommand(s, func(parsed runOptions, _ cli.Streams) int { o, called = parsed, true; return cli.ExitOK }))
	if code != cli.ExitOK || !called {
		return o, errb.String(), fmt.Errorf("exit %d: %s", code, errb.String())
	}
	return o, errb.String(), nil
}

func TestRunBadInputExitCodes(t *testing.T) {
	testroot.Require(t, "enforcerd run refuses a non-root user before it looks at the command")
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Executable, but no "#!" and no binary format the kernel knows.
	noFormat := filepath.Join(dir, "noformat")
	if err := os.WriteFile(noFormat, []byte("echo hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown flag value", []string{"run", "--network=maybe", "--", "true"}, cli.ExitUsage, "maybe"},
		{"unknown flag", []string{"run", "--bogus", "--", "true"}, cli.ExitUsage, "bogus"},
		{"missing --", []string{"run", "--write=deny", "true"}, cli.ExitUsage, "--"},
		{"missing -- only flags", []string{"run", "--write=deny"}, cli.ExitUsage, "missing --"},
		{"missing command", []string{"run", "--write=deny", "--"}, cli.ExitUsage, "missing command"},
		{"command not found", []string{"run", "--", "enforcerd-test-no-such-command"}, cli.ExitNotFound, "enforcerd-test-no-such-command"},
		{"command not executable", []string{"run", "--", notExec}, cli.ExitNotExecutable, notExec},
		{"exec format error", []string{"run", "--", noFormat}, cli.ExitNotExecutable, "exec format error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.Run(t, nil, c.args...)
			if r.Code != c.code {
				t.Errorf("exit %d, want %d (stderr: %s)", r.Code, c.code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, c.says) {
				t.Errorf("stderr does not say %q: %s", c.says, r.Stderr)
			}
		})
	}
}

// TestRunUnknownRoleIsAUsageError: a --role that is not a role name (a
// typo, a name nobody declared, an empty one) stops run with exit 2 and the
// valid names before anything is looked up or enforced: CMD would be 127
// (not found) had run got that far. Needs no privileges.
func TestRunUnknownRoleIsAUsageError(t *testing.T) {
	const missing = "/enforcerd-test-no-such-dir/cmd"
	for _, flags := range [][]string{
		{"--role", "reviwer"}, {"--role", "hacker"}, {"--role", ""}, {"--role=  "}, {"--role", "auditor"},
		{"--role", "wor\u212Aer"}, {"--network=deny", "--role", "explorer-x"},
	} {
		code, _, errs := cmdline(append(append([]string{"run"}, flags...), "--", missing)...)
		if code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d (stderr: %s)", flags, code, cli.ExitUsage, errs)
		}
		if !strings.HasPrefix(errs, "enforcerd run: --role: ") ||
			!strings.Contains(errs, "valid names: roles advisor, custom, explore, general, implement, planner, reviewer, test;") ||
			strings.Contains(errs, missing) {
			t.Errorf("%q: stderr %q", flags, errs)
		}
		if _, _, err := parseRunArgs(t, append(flags, "--", "true")); err == nil {
			t.Errorf("%q: parseRunArgs accepted", flags)
		}
	}
}

// TestRunRoleCeilings: a declared name, in any ASCII case, starts from its
// role's requested ceiling; without --role nothing is restricted.
func TestRunRoleCeilings(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  policy.KernelCeiling
	}{
		{nil, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}},
		{[]string{"--role", "Reviewer"}, policy.KernelCeiling{Shell: policy.ShellReadOnly}},
		{[]string{"--role=SCOUT"}, policy.KernelCeiling{Network: true, Shell: policy.ShellReadOnly}},
		{[]string{"--role", " advisor "}, policy.KernelCeiling{Network: true, Shell: policy.ShellNone}},
		{[]string{"--role", "manager", "--write=Deny"}, policy.KernelCeiling{Network: true, Shell: policy.ShellFull}},
		{[]string{"--role", "custom", "--network=FALSE", "--shell=Read_Only"}, policy.KernelCeiling{Write: true, Shell: policy.ShellReadOnly}},
	} {
		o, stderr, err := parseRunArgs(t, append(c.flags, "--", "true"))
		if err != nil || o.ceiling != c.want || stderr != "" {
			t.Errorf("%q: ceiling %v, %v (stderr %q); want %v", c.flags, o.ceiling, err, stderr, c.want)
		}
	}
}
