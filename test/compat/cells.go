package compat

import "github.com/enforcerd/enforcerd/denial"

// Tool is one unmodified tool's task: testdata/tasks/<Name>.sh, run with
// /bin/sh -eux in the workspace (the write root), with the environment of
// Env and the fixtures of testdata/fixtures.sh under $FIX.
type Tool struct {
	Name string
	// Task says what the script does (the table's first column).
	Task string
	// Writes: the task writes (beneath the workspace only); a read-only
	// task reads the fixtures and the system and writes nothing.
	Writes bool
	// Tolerate are denials the tool meets under some ceilings and works
	// without (a probe, an optional lock, a fallback), expected in every
	// cell of the tool; TolerateWhy says what the tool does there.
	Tolerate    []Want
	TolerateWhy string
	// Except overrides the outcome for some roles (with Outcome.Why).
	Except map[string]Outcome
}

// Tools are the cells' rows, most used first.
var Tools = []Tool{
	{Name: "git", Writes: true, Task: "init, add, commit, branch, rebase, stash, worktree, gc, a local clone"},
	{Name: "git-read", Task: "status, log, diff, show, grep, blame of a repository outside the write root",
		Tolerate:    []Want{{Rule: denial.RuleWrite, Under: "$FIX/repo/.git/index.lock"}},
		TolerateWhy: "write=false: git status refreshes the index when it can (an optional .git/index.lock, outside the write root here) and goes on without; GIT_OPTIONAL_LOCKS=0 (or --no-optional-locks) skips the attempt"},
	{Name: "python-venv", Writes: true, Task: "python3 -m venv (without its own pip), pip install from a local wheel directory into it (the system's pip)",
		Tolerate:    []Want{{Rule: denial.RuleNetwork, Object: "AF_INET6 "}},
		TolerateWhy: "network=false: pip (its urllib3) probes IPv6 support with an AF_INET6 socket when it starts, and works without"},
	{Name: "pytest", Writes: true, Task: "pytest on a small test module (its cache in the workspace)"},
	{Name: "python-mp", Task: "multiprocessing (a program outside the write root): Pools (fork, spawn), a Lock, a Queue: POSIX semaphores the sandbox creates in /dev/shm"},
	{Name: "c-make", Writes: true, Task: "make + gcc: compile, link and run a two-file C program"},
	{Name: "sqlite-write", Writes: true, Task: "sqlite3: create a database in the workspace, WAL, transactions, an index"},
	{Name: "sqlite-read", Task: "sqlite3: read-only queries (shared locks) of a database outside the write root, rollback journal and WAL",
		Tolerate:    []Want{{Rule: denial.RuleWrite, Under: "$FIX"}},
		TolerateWhy: "write=false: sqlite3 opens a database for writing first and falls back to read-only (-readonly and ?mode=ro skip that), and a WAL database's -wal and -shm files likewise, even with -readonly; the queries and their shared locks work"},
	{Name: "flock", Writes: true, Task: "flock(1) scripts: exclusive and shared locks, a lock held across a subshell"},
	{Name: "pty", Task: "programs on a pty the sandbox opens (nothing written): script(1), expect driving sh and a password prompt"},
	{Name: "tmux", Writes: true, Task: "tmux: a server on a pty the sandbox opens (its socket in the workspace), send-keys, capture-pane",
		Tolerate: []Want{{Rule: denial.RuleTaskName}, {Rule: denial.RuleWrite, Object: "/utmp "},
			{Rule: denial.RuleNetwork, Object: "AF_UNIX SOCK_DGRAM peer"}},
		TolerateWhy: "tmux names its server (prctl PR_SET_NAME), refused under every ceiling: the task name reaches the kernel log and audit records (threat model K10); under write=false and network=false its utempter helper cannot record the pane in /run/utmp nor log to syslog (/dev/log), host objects both. tmux works without all three"},
	{Name: "xargs-pool", Task: "xargs -P 4: a process pool hashing the fixture tree"},
	{Name: "search", Task: "rg and find over a source tree"},
	{Name: "archive", Writes: true, Task: "tar with gzip and xz: create, list, extract"},
	{Name: "sysfiles", Task: "reading /etc/os-release, /proc/self/*, /proc/cpuinfo, /sys/devices/system/cpu"},
	{Name: "go", Writes: true, Task: "a go 1.19 module: go build and go test with GOCACHE/GOMODCACHE in the workspace, a dependency from a prepared module proxy"},
	{Name: "node", Writes: true, Task: "npm ci offline from a local package tarball (its cache in the workspace), node --test",
		Tolerate:    []Want{{Rule: denial.RuleTaskName}, {Rule: denial.RuleNetwork, Object: "AF_NETLINK "}},
		TolerateWhy: "npm sets its process title (process.title: prctl PR_SET_NAME), refused under every ceiling (threat model K10); under network=false its look at the network interfaces (a netlink socket) is refused too; npm works without both"},
}

// Expect is a cell's expected outcome: t.Except[role], or the role's
// ceiling's rule for a task that writes or reads:
//   - general, implement (write, network, shell=full): works;
//   - test (write=false beneath the workspace root, network=false,
//     shell=full): works, the task writes only beneath its workspace;
//   - explore, reviewer (shell=read_only): a read-only task works; a task
//     that writes is denied: every process a read_only shell execs is
//     write-denied, beneath a write root too;
//   - advisor (shell=none): denied: only the entrypoint runs, and its exec
//     of the task's shell is refused.
//
// The tool's Tolerate denials are added to every cell's expected set.
func Expect(t Tool, role string) Outcome {
	o := expect(t, role)
	if len(t.Tolerate) > 0 {
		o.Want = append(append([]Want(nil), o.Want...), t.Tolerate...)
	}
	return o
}

func expect(t Tool, role string) Outcome {
	if o, ok := t.Except[role]; ok {
		return o
	}
	switch role {
	case "explore", "reviewer":
		if t.Writes {
			return Outcome{Denied: true, Want: []Want{{Rule: denial.RuleWrite}},
				Why: "shell=read_only: processes it execs may not write, beneath a write root neither"}
		}
	case "advisor":
		return Outcome{Denied: true, Want: []Want{{Rule: denial.RuleShellNone}},
			Why: "shell=none: no program but the entrypoint runs (a tool can be the entrypoint, with --exec-allow for what it runs)"}
	}
	return Outcome{}
}

// Diagnoses explain the cells known to fail ("tool/role"): the rule that
// denies, why that is a false denial, and the way around it until the
// rule changes. docs/compatibility.md prints them under the failing cells.
// None is known: multiprocessing's semaphores, the last, are the
// sandbox's own IPC objects (bpf/shm.h).
var Diagnoses = map[string]string{}
