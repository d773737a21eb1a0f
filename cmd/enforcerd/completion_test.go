package main

// enforcerd completion: a script for each shell, and the candidates the
// scripts ask "enforcerd __complete" for (commands, flag values, the ids
// of a running daemon's containers).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	for sh, marks := range map[string][]string{
		"bash": {"# bash completion V2 for enforcerd", "__enforcerd_", "complete -o default -F __start_enforcerd enforcerd"},
		"zsh":  {"#compdef enforcerd", "compdef _enforcerd enforcerd", "__complete"},
		"fish": {"# fish completion for enforcerd", "complete -c enforcerd", "__complete"},
	} {
		code, out, errs := cmdline("completion", sh)
		if code != exitOK || errs != "" {
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
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, "enforcerd completion: "+c.msg+"\nRun 'enforcerd completion --help' for usage.\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
	}
}

// candidates are the completion candidates "enforcerd __complete ARGS"
// prints (without descriptions and the directive line).
func candidates(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, _ := cmdline(append([]string{"__complete"}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d", args, code)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got
}

func TestCompletionCandidates(t *testing.T) {
	ts := ctlServer(t)
	mustCtl(t, ts, "register", "--id", "alpha", "--cgroup", "/c/one")
	mustCtl(t, ts, "register", "--id", "beta", "--cgroup", "/c/two")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{""}, "check,completion,ctl,daemon,help,hook,nspawn,proxy,run,surface,uninstall,version"},
		{[]string{"ctl", ""}, "denials,get,list,narrow,register,status,surface,unregister"},
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
		{[]string{"ctl", "--socket", ts.Socket, "get", ""}, "alpha,beta"},
		{[]string{"ctl", "get", "--socket", ts.Socket, "b"}, "beta"},
		{[]string{"ctl", "--socket", ts.Socket, "narrow", "alpha", ""}, ""},
		{[]string{"ctl", "--socket", ts.Socket, "denials", "--container", ""}, "alpha,beta"},
		// No daemon: nothing, and no error.
		{[]string{"ctl", "--socket", filepath.Join(t.TempDir(), "none"), "get", ""}, ""},
	} {
		if got := strings.Join(candidates(t, c.args...), ","); got != c.want {
			t.Errorf("__complete %q: %q, want %q", c.args, got, c.want)
		}
	}
}
