package surface

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	return cmdline(append([]string{"surface"}, args...)...)
}

func TestSurfaceJSON(t *testing.T) {
	code, out, errs := runCLI("--role", "reviewer", "--session", "depth=3", "--json")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	var s policy.Surface
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	reviewer, _ := policy.LookupRole("reviewer")
	want := policy.ResolveSurface(reviewer, policy.Ceiling{Network: true, Write: true, Shell: policy.ShellFull, Tools: true, DelegationDepth: 3}, "")
	if s.Fingerprint != want.Fingerprint || s.Kernel != want.Kernel || s.Role != policy.RoleReviewer {
		t.Fatalf("got %+v", s)
	}
	if !strings.Contains(out, `"allowed_tools": null`) || !strings.Contains(out, `"delegation_depth": 0`) {
		t.Fatal(out)
	}
}

func TestSurfaceBadSessionExitsUsageNamingTheField(t *testing.T) {
	for session, want := range map[string]string{
		"write=maybe":   `enforcerd surface: --session: write: invalid value "maybe" (want true|false|allow|deny)`,
		"shell=partial": `enforcerd surface: --session: shell: invalid value "partial" (want none|read_only|full)`,
		"depth=-1":      `enforcerd surface: --session: depth: invalid value "-1"`,
		"speed=fast":    `enforcerd surface: --session: speed: unknown field`,
	} {
		code, out, errs := runCLI("--session", session, "--json")
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, want) {
			t.Errorf("--session %s: code %d stdout %q stderr %q", session, code, out, errs)
		}
	}
}

func TestSurfaceUnknownToolGroupWarns(t *testing.T) {
	code, out, errs := runCLI("--role", "test", "--tool-groups", "messaging,bogus,execution", "--json")
	if code != cli.ExitOK || !strings.Contains(errs, `warning: unknown tool group "bogus" skipped`) {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	var s policy.Surface
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "bogus") {
		t.Fatalf("warnings %v", s.Warnings)
	}
	for _, tool := range s.SubagentBuiltinTools {
		if tool == "Bash" {
			t.Fatal("test role subagent keeps raw Bash")
		}
	}
}

func TestSurfaceSummaryAndHelp(t *testing.T) {
	code, out, _ := runCLI("--role", "Manager")
	if code != cli.ExitOK || !strings.Contains(out, `role:                   general (label "Manager", posture general)`) ||
		!strings.Contains(out, "fingerprint:            v1;posture=general;") {
		t.Fatalf("code %d out %s", code, out)
	}
	code, out, _ = runCLI()
	if code != cli.ExitOK || !strings.Contains(out, `role:                   general (label "general", posture general)`) {
		t.Fatalf("no --role: code %d out %s", code, out)
	}
	for _, h := range []string{"--help", "-h"} {
		code, out, _ = runCLI(h)
		if code != cli.ExitOK || !strings.Contains(out, "Ceiling text:") || !strings.Contains(out, "Exit status:") || !strings.Contains(out, "mcp_allowed_tools") {
			t.Fatalf("%s: code %d out %q", h, code, out)
		}
	}
	for _, args := range [][]string{{"--bogus"}, {"stray"}, {"--role"}} {
		if code, _, errs := runCLI(args...); code != cli.ExitUsage || !strings.Contains(errs, "enforcerd surface:") {
			t.Errorf("%v: code %d stderr %q", args, code, errs)
		}
	}
}

// A --role that is not a role name is a usage error listing the valid
// names, printed before anything else; it never runs as explore.
func TestSurfaceUnknownRoleIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"--role", "hacker"}, {"--role", "reviwer", "--json"}, {"--role", ""}, {"--role=  "}, {"--role", "Auditor"},
	} {
		code, out, errs := runCLI(args...)
		if code != cli.ExitUsage || out != "" {
			t.Errorf("%q: code %d stdout %q", args, code, out)
		}
		if !strings.HasPrefix(errs, "enforcerd surface: --role: ") ||
			!strings.Contains(errs, "valid names: roles advisor, custom, explore, general, implement, planner, reviewer, test;") ||
			!strings.Contains(errs, "legacy aliases awaiter,") || !strings.Contains(errs, "member titles coordinator,") {
			t.Errorf("%q: stderr %q", args, errs)
		}
	}
	// Case and white space are not errors.
	if code, _, errs := runCLI("--role", " REVIEWER ", "--json"); code != cli.ExitOK {
		t.Fatalf("--role ' REVIEWER ': code %d stderr %q", code, errs)
	}
}

// The help says which kernel field filters which list, and the lists obey
// it: the reviewer (write=false) sees no Edit or Write, the advisor
// (shell=none) no Bash.
func TestSurfaceListsFollowTheKernelCeiling(t *testing.T) {
	_, help, _ := runCLI("--help")
	for _, want := range []string{"kernel.write=false  builtin_tools and subagent_builtin_tools omit\n                        Write, Edit, MultiEdit, NotebookEdit",
		"kernel.shell=none   builtin_tools and subagent_builtin_tools omit\n                        Bash; mcp_allowed_tools omits the bash MCP"} {
		if !strings.Contains(help, want) {
			t.Errorf("help does not say %q", want)
		}
	}
	for role, gone := range map[string][]string{
		"reviewer": {"Edit", "Write", "MultiEdit", "NotebookEdit"},
		"advisor":  {"Edit", "Write", "Bash"},
	} {
		code, out, errs := runCLI("--role", role, "--tool-groups", "execution,web_tools", "--json")
		if code != cli.ExitOK {
			t.Fatalf("%s: code %d stderr %q", role, code, errs)
		}
		var s policy.Surface
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{s.BuiltinTools, s.SubagentBuiltinTools, s.MCPAllowedTools} {
			for _, tool := range list {
				if slices.Contains(gone, tool) || strings.HasPrefix(tool, policy.BashMCPServerPrefix) && s.Kernel.Shell == policy.ShellNone {
					t.Errorf("%s (kernel %v) lists %q", role, s.Kernel, tool)
				}
			}
		}
		if !slices.Contains(s.BuiltinTools, "Read") {
			t.Errorf("%s lost Read: %v", role, s.BuiltinTools)
		}
	}
}
