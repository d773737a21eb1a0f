package e2etest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pod is a host-network pod sandbox run through crictl, with one
// container.
type pod struct {
	e       *env
	name    string
	cfg     string // pod config file
	id      string // sandbox id
	ctrCfg  string // container config file
	ctr     string // container id (after create)
	logPath string // the container's log file
}

// probeScript tries an HTTP fetch from the loopback listener at addr and
// creating file (then printing wget=STATUS and touch=STATUS, each after
// the command's own error message), then sleeps: the container stays
// running for exec and for the daemon's restart.
func probeScript(addr, file string) string {
	return fmt.Sprintf("wget -q -O /dev/null http://%s/ 2>&1; echo wget=$?; touch %s 2>&1; echo touch=$?", addr, file)
}

// runPod runs a host-network pod sandbox named name with annotations and
// writes the config of its container "agent", whose entrypoint is
// /bin/sh -c script followed by a long sleep.
func (e *env) runPod(name string, annotations map[string]string, script string) *pod {
	e.t.Helper()
	p := &pod{e: e, name: name, cfg: filepath.Join(e.dir, name+"-pod.json"), ctrCfg: filepath.Join(e.dir, name+"-ctr.json")}
	logDir := filepath.Join(e.dir, "logs", name)
	p.logPath = filepath.Join(logDir, "agent.log")
	e.writeJSON(p.cfg, map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name},
		"annotations":   annotations,
		"log_directory": logDir,
		// NamespaceMode NODE (2): the host's network namespace, so the
		// container reaches the test's loopback listener and only the
		// ceiling stands between them.
		"linux": map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}},
	})
	e.writeJSON(p.ctrCfg, map[string]any{
		"metadata": map[string]any{"name": "agent"},
		"image":    map[string]any{"image": testImage},
		"command":  []string{"/bin/sh", "-c", script + "; exec sleep 1000000"},
		"envs":     []map[string]string{{"key": "PATH", "value": "/bin"}},
		"log_path": "agent.log",
	})
	p.id = e.crictl("runp", p.cfg)
	return p
}

func (e *env) writeJSON(path string, v any) {
	e.t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(path, string(b))
}

// create runs `crictl create`: the container id, or the error output.
func (p *pod) create() (string, error) {
	out, err := p.e.crictlOut("create", p.id, p.ctrCfg, p.cfg)
	if err != nil {
		return out, err
	}
	p.ctr = strings.TrimSpace(out)
	return p.ctr, nil
}

// mustStart creates and starts the container and waits until its script
// has printed touch=STATUS; it returns the container's log.
func (p *pod) mustStart() string {
	p.e.t.Helper()
	if out, err := p.create(); err != nil {
		p.e.t.Fatalf("pod %s: crictl create: %v\n%s\n%s", p.name, err, out, p.e.logs())
	}
	p.e.crictl("start", p.ctr)
	var log string
	p.e.waitFor(60*time.Second, "pod "+p.name+"'s script to finish", func() bool {
		log = p.log()
		return strings.Contains(log, "touch=")
	})
	return log
}

// log is the container's output (CRI log lines "TIME STREAM TAG MSG",
// reduced to MSG).
func (p *pod) log() string {
	b, _ := os.ReadFile(p.logPath)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			out = append(out, f[3])
		}
	}
	return strings.Join(out, "\n")
}

// exec runs argv in the container (CRI ExecSync); it returns the
// combined output and crictl's error.
func (p *pod) exec(argv ...string) (string, error) {
	return p.e.crictlOut(append([]string{"exec", "-s", p.ctr}, argv...)...)
}

// pid is the host pid of the container's process (crictl inspect).
func (p *pod) pid() int {
	p.e.t.Helper()
	var v struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	out := p.e.crictl("inspect", p.ctr)
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Info.Pid == 0 {
		p.e.t.Fatalf("crictl inspect %s: pid %d, %v\n%s", p.ctr, v.Info.Pid, err, out)
	}
	return v.Info.Pid
}

// exists reports whether path exists in the container's root, seen from
// the host through /proc/PID/root.
func (p *pod) exists(path string) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(p.pid()) + "/root" + path)
	return err == nil
}

// remove stops and removes the pod and its container.
func (p *pod) remove() {
	p.e.t.Helper()
	p.e.crictl("stopp", p.id)
	p.e.crictl("rmp", p.id)
}

// denied checks a probe's output (probeScript): both commands failed
// with "Operation not permitted" (EPERM).
func denied(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"wget", "touch"} {
		ok := false
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, c+":") && strings.Contains(l, "Operation not permitted") {
				ok = true
			}
		}
		if !ok || strings.Contains(out, c+"=0") {
			t.Errorf("%s: %s was not denied with EPERM; output:\n%s", what, c, out)
		}
	}
}

// mustExecDenied runs script with /bin/sh -c in the container (crictl
// exec) and checks its output with denied: the exec'd process is confined
// like the entrypoint.
func (p *pod) mustExecDenied(what, script string) {
	p.e.t.Helper()
	out, err := p.exec("/bin/sh", "-c", script)
	if err != nil && !strings.Contains(out, "touch=") {
		p.e.t.Fatalf("%s: crictl exec: %v\n%s", what, err, out)
	}
	denied(p.e.t, what, out)
}
