package main

// enforcerd completion: a script for each shell, and the candidates the
// scripts ask "enforcerd __complete" for (commands, flag values; the ids
// of a running daemon's containers: ctl/completion_test.go).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestCompletionScripts(t *testing.T) {
	for sh, marks := range map[string][]string{
		"bash": {"# bash completion V2 for enforcerd", "__enforcerd_", "complete -o default -F __start_enforcerd enforcerd"},
		"zsh":  {"#compdef enforcerd", "compdef _enforcerd enforcerd", "__complete"},
		"fish": {"# fish completion for enforcerd", "complete -c enforcerd", "__complete"},
	} {
		code, out, errs := cmdline("completion", sh)
		if code != cli.ExitOK || errs != "" {
			t.Fatalf("completion %s: exit %d, stderr %q", sh, code, errs)
		}
		for _, m := range marks {
			if !strings.Contains(out, m) {
				t.Errorf("completion %s: no %q in the script", sh, m)
			}
		}
		if sh == "bash" {
			// Sourced, the script defines its entry function. The vmtest
			// guest has busybox and no bash: there only the content is
			// checked (the host runs this part).
			if _, err := exec.LookPath("bash"); err != nil && os.Getenv("ENFORCERD_VMTEST") != "" {
				t.Log("no bash in the vmtest guest: the script is sourced on the host only")
				continue
			}
			f := filepath.Join(t.TempDir(), "enforcerd.bash")
			if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command("bash", "-c", ". "+f+" && declare -F __start_enforcerd").CombinedOutput(); err != nil ||
				strings.TrimSpace(string(b)) != "__start_enforcerd" {
				t.Errorf("bash: sourcing the script: %v, %q", err, b)
			}
		}
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"completion"}, "missing shell (bash, zsh or fish)"},
		{[]string{"completion", "tcsh"}, `unknown shell "tcsh" (want bash, zsh or fish)`},
		{[]string{"completion", "bash", "zsh"}, `unexpected argument "zsh" (one shell)`},
		{[]string{"completion", "--bogus", "bash"}, "flag provided but not defined: --bogus"},
	} {
		code, out, errs := cmdline(c.args...)
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, "enforcerd completion: "+c.msg+"\nRun 'enforcerd completion --help' for usage.\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
	}
}

// candidates are the completion candidates "enforcerd __complete ARGS"
// prints (clitest.Candidates).
func candidates(t *testing.T, args ...string) []string {
	t.Helper()
	return clitest.Candidates(t, execute, args...)
}

func TestCompletionCandidates(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{""}, "check,completion,ctl,daemon,help,hook,nspawn,proxy,run,surface,uninstall,version"},
		{[]string{"ctl", ""}, "denials,get,list,narrow,ready,register,status,surface,unregister"},
		{[]string{"completion", ""}, "bash,zsh,fish"},
		{[]string{"ctl", "register", "--activate", ""}, "now,exec"},
		{[]string{"ctl", "register", "--role", ""}, "general,explore,planner,reviewer,implement,test,advisor,custom"},
		{[]string{"run", "--shell", ""}, "none,read_only,full"},
		{[]string{"run", "--network", ""}, "allow,deny"},
		{[]string{"run", "--write", ""}, "allow,deny"},
		{[]string{"run", "--role", ""}, "general,explore,planner,reviewer,implement,test,advisor,custom"},
		{[]string{"surface", "--role", ""}, "general,explore,planner,reviewer,implement,test,advisor,custom"},
		{[]string{"surface", "--tool-groups", ""}, "messaging,meta,inbox,lifecycle,approvals,scheduling,forge,execution,web_tools"},
		{[]string{"daemon", "--log-format", ""}, "text,json"},
	} {
		if got := strings.Join(candidates(t, c.args...), ","); got != c.want {
			t.Errorf("__complete %q: %q, want %q", c.args, got, c.want)
		}
	}
}
