package ctl

// The help texts of enforcerd ctl and its subcommands.

// ctlCommonFlags are the flags of every ctl command, as each help lists
// them.
const ctlCommonFlags = `Flags of every ctl command (before or after the command name):
  --socket PATH
      The daemon's API socket. Default: /run/enforcerd/enforcerd.sock.
  --json
      Print the API's JSON (the daemon's answer, indented) instead of
      the readable tables, for scripts. The JSON fields are those of the
      API (enforcerd daemon --help); the tables may change.
  --timeout D
      Give up on a request after D (Go duration: 500ms, 10s, 1m).
      Default: 10s. Following denials has no time bound.
  -h, --help
      Print this help.
`

// ctlExitStatus is the exit status of every ctl command.
const ctlExitStatus = `Exit status:
  0  success
  1  the daemon cannot be reached (the message names the socket; is
     the daemon running? systemctl status enforcerd.socket
     enforcerd.service), or it refused the
     request: the message names its error code and HTTP status
     (bad_request 400, forbidden 403, not_found 404, conflict 409,
     cannot_enforce, partial_coverage, unsafe_program,
     entrypoint_required 422, unavailable 503, error 500)
  2  usage error: bad flag, missing or extra argument, bad ceiling text
`

const ctlHelp = `Usage:
  enforcerd ctl [--socket PATH] [--json] [--timeout D] COMMAND [flags] [args]

Query and change a running enforcerd daemon over its API socket: the
registered containers, their ceilings and coverage, the denial records.
Every command is one request to the daemon's HTTP+JSON API (the
endpoints are listed in enforcerd daemon --help); ctl builds the request
and prints the answer. The API is root-only: run ctl as root.

Commands:
  status                 the daemon's status: version, settings, the
                         coverage of each ceiling field, every hook
  ready                  whether the daemon is ready (exit 0) or what
                         is missing (exit 1): for readiness probes
  list                   the registered containers: state (pending or
                         active), kernel ceiling, coverage
  get ID                 one registered container
  register [flags]       register a container with a ceiling
  unregister ID          remove a container's ceiling
  narrow ID --ceiling C  narrow a container's ceiling (never widens)
  surface ID             the tool surface of a container's ceiling
  denials [flags]        the recent denial records, or --follow new ones

Run "enforcerd ctl COMMAND --help" for a command's flags and output.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlStatusHelp = `Usage:
  enforcerd ctl status [--socket PATH] [--json] [--verbose]

Print the daemon's status (GET /v1/status): its version, pid and pin
directory, how many containers are registered, whether it allows partial
coverage and activation at exec, how many denial records the kernel ring
buffer lost; then, for each ceiling field restricted alone, whether the
host enforces it in full, in part or not at all, by which mechanism, and
the gap codes of what is not enforced; then, per layer, how many of its
programs (hooks) are attached and why the others are not, each reason
once with the number of programs it stopped
("bpf-lsm: 0/N hooks attached: REASON").

Flags of status:
  -v, --verbose
      Also print every program, one row each: its hook, layer and whether
      it is attached (or why not). --json always has every program.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlReadyHelp = `Usage:
  enforcerd ctl ready [--socket PATH] [--json] [--timeout D]

Ask the daemon whether it is ready (GET /v1/ready) and exit 0 when it
is, 1 when it is not or cannot be reached: a readiness probe that needs
no network (deploy/kubernetes runs it as the DaemonSet's exec probe,
which works when the metrics listener is bound to loopback in the pod).

The daemon is ready when each part is:
  pins   the eBPF programs and maps are loaded or re-adopted from their
         pins and the host policy is set
  state  the state file is reconciled with the kernel (false while the
         reconcile runs)
  api    the API socket is served (false again once the daemon stops)

Prints "ready", or "not ready: " and each missing part with the reason,
"; "-separated, e.g. "not ready: api: stopping". With --json: the API's
body, {"ready": BOOL, "missing": ["PART: reason", ...]}.

The API socket is served only once the pins are adopted and the state
reconciled, so while the daemon starts this command cannot reach it: with
socket activation the request waits in the socket's queue until --timeout
("no answer within --timeout"), without it the socket is missing or
refuses. Both are exit 1, not ready. The metrics listener (metrics.listen)
answers from the start: GET /readyz is 200 "ready" or 503 "not ready: ..."
with the same parts, and GET /healthz is 200 "ok" while the process
serves.

` + ctlCommonFlags + `
Exit status:
  0  ready
  1  not ready: the daemon answered that a part is missing (printed on
     standard output), or it cannot be reached (the message on standard
     error names the socket and the cause: no answer within --timeout, a
     missing socket, a refused connection), or it refused the request
     (forbidden 403: ctl is not root, or runs inside an enforced cgroup)
  2  usage error: bad flag, extra argument
`

const ctlListHelp = `Usage:
  enforcerd ctl list [--socket PATH] [--json]

List the registered containers (GET /v1/containers), one row each:
  ID         the container id
  STATE      pending (registered at createRuntime, in force from the
             first exec), active (in force), or frozen/killed: pending
             deadline passed
  CGROUP     the registered cgroup2 group path, and CGROUP-ID its id
  ROLE       the role the ceiling was resolved with ("-": general)
  KERNEL     the kernel ceiling: network, write, shell
  COVERAGE   full; audit-only (denials are recorded, nothing is
             denied); or partial (N not enforced): the daemon allows
             partial coverage and this host does not enforce part of the
             ceiling
  PARENT     the parent container whose ceiling bounds this one
After the table, "Not enforced:" lists every gap of the containers with
partial or audit-only coverage: ID: code (field): detail.

With --json: {"containers": [...]}, each as ctl get --json prints it.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlGetHelp = `Usage:
  enforcerd ctl get [--socket PATH] [--json] ID

Print one registered container (GET /v1/containers/ID): its state and
activation (and why an at-exec registration is in force at once, or was
frozen), the pending deadline, its cgroup, role, the session ceiling the
role was resolved in, the effective ceiling, its kernel form, coverage,
parent, tool groups, authority fingerprint, registration time, the
runtime init and entrypoint of an at-exec registration, and each part of
the ceiling the host does not enforce ("NOT enforced": code, field,
detail). An unknown ID is not_found (exit 1).

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlUnregisterHelp = `Usage:
  enforcerd ctl unregister [--socket PATH] [--json] ID

Unregister container ID (DELETE /v1/containers/ID): its ceiling is no
longer enforced and its cgroup is forgotten. Prints "unregistered ID"
(with --json: {"unregistered": ID}). An unknown ID is not_found (exit 1).

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlNarrowHelp = `Usage:
  enforcerd ctl narrow [--socket PATH] [--json] ID --ceiling CEILING

Narrow container ID's ceiling (POST /v1/containers/ID/narrow): the new
ceiling is the meet (field-wise minimum) of the current one and CEILING,
so narrowing never widens anything; registered children are narrowed
with it. Prints the container as ctl get does; when the ceiling is
unchanged (CEILING is nowhere narrower, e.g. it asked to widen) it also
says so on stderr, and still exits 0.

Flags:
  --ceiling CEILING
      Required. Ceiling text, KEY=VALUE[,KEY=VALUE]... with keys
      network, write (true|false or allow|deny), shell
      (none|read_only|full), tools (BOOL), depth (N); text that does not
      parse is a usage error (exit 2). Narrowing to shell=none is refused
      (unsafe_program) while a process in the cgroup runs a shell, a
      multi-call binary, the loader or a script.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlSurfaceHelp = `Usage:
  enforcerd ctl surface [--socket PATH] [--json] ID

Print the tool surface of container ID's registered ceiling (GET
/v1/containers/ID/surface): the role, ceiling, kernel ceiling, tool
lists and authority fingerprint, as enforcerd surface prints them for a
role (see enforcerd surface --help for the fields). A process inside an
enforced container may ask for its own container only.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlRegisterHelp = `Usage:
  enforcerd ctl register [--socket PATH] [--json] --id ID (--cgroup PATH | --pid PID)
                         [--role R] [--ceiling C] [--parent ID] [--audit-only]
                         [--tool-groups G,...] [--proxy-allow P,...|none]
                         [--allow-connect ENDPOINT]... [--write-root DIR]...
                         [--exec-allow PATH]... [--allow-device DEV]...
                         [--own-terminals client|init|none]
                         [--deny-console-egress]
                         [--activate now|exec] [--init-pid PID]
                         [--entrypoint PATH --entrypoint-root DIR
                          [--entrypoint-env-path PATH] [--entrypoint-cwd DIR]]
  enforcerd ctl register [--socket PATH] [--json] --file FILE|-

Register a container with the daemon (POST /v1/containers): its cgroup
and every process below it get the ceiling, the meet of the role's
ceiling, the ceiling text and the parent's ceiling. Prints the container
as ctl get does, including what the host does not enforce.

The request comes from the flags, one per field of the API's request,
or whole from --file: a JSON object, sent as it is. The daemon decodes it
strictly: a key the request does not have, in any letter case, or a key
given twice is refused (bad_request, exit 1), never dropped.

Flags:
  --id ID
      Required (without --file). The container id.
  --cgroup PATH
      The container's cgroup2 group path below the mount, e.g.
      /machine.slice/agent-1.scope.
  --pid PID
      A process of the container: the daemon reads its cgroup from
      /proc/PID/cgroup. With --cgroup too, the two must agree.
  --role R
      Role name (general, explore, planner, reviewer, implement, test,
      advisor, custom, an alias or a title; enforcerd surface --help).
      Without --role: general. An unknown or empty name is a usage error.
  --ceiling C
      Ceiling text (KEY=VALUE,...; enforcerd surface --help) that
      narrows the role's ceiling. Text that does not parse is a usage
      error.
  --parent ID
      A registered container whose ceiling bounds this one.
  --audit-only
      Record what the ceiling would deny, deny nothing.
  --tool-groups G,...
      Comma-separated tool groups of the surface.
  --allow-connect ENDPOINT
      Repeatable, at most 16. With network=false: an endpoint the container
      may still connect or send to: tcp:IP:PORT, udp:IP:PORT, or
      unix:/PATH (resolved inside --entrypoint-root when given).
  --write-root DIR
      Repeatable, at most 16. With write=false: an absolute path of a
      directory beneath which writes stay allowed (write_roots), resolved
      inside --entrypoint-root when given, else the --pid's root, else /,
      and kept by identity; a relative path is a usage error.
  --exec-allow PATH
      Repeatable, at most 16. With shell=none (the effective ceiling): an
      absolute path of a file the container may execute besides its
      entrypoint, resolved inside --entrypoint-root when given, else the
      --pid's root, else /, and kept by identity (device and inode). A
      shell, a multi-call binary (BusyBox), the dynamic loader, or a file
      the daemon cannot classify is refused (unsafe_program); a relative
      path is a usage error; without shell=none it is bad_request.
  --allow-device DEV
      Repeatable, at most 16. A device node the container may use besides
      the null-like devices and its own terminals, under every ceiling:
      c MAJOR:MINOR, b MAJOR:MINOR, or an absolute path to a device node
      resolved to its type and number inside --entrypoint-root when
      given, else the --pid's root, else / (allow_devices). Met with the
      lists of the registrations it is nested in. A malformed entry or a
      duplicate is a usage error; a path that is missing or not a device
      node is bad_request.
  --own-terminals client|init|none
      Whose standard input, output, error and controlling terminal are
      the container's own terminals (own_terminals): client, this ctl
      process's (run it from the terminal the container will use); init,
      --init-pid's; none (the default): no terminal, every terminal is a
      host device.
  --deny-console-egress
      Under network=false, an own terminal that leaves the machine (the
      system console, a serial line) is refused too.
  --proxy-allow P,...|none
      Domain patterns this container may reach through the daemon's
      egress proxy: the proxy's own allow list narrowed to these (never
      widened); "none" allows no domain (docs/proxy.md).
  --activate now|exec
      now (the default): in force when the registration returns. exec:
      pending until the first exec in the cgroup (an OCI container
      registered at createRuntime); the daemon freezes the cgroup when
      no exec comes before its pending deadline.
  --init-pid PID
      With --activate exec: the runtime's init, the only process that
      may be in the cgroup while the registration is pending.
  --entrypoint PATH
      With --activate exec under shell=none (required there): the first
      exec's program, process.args[0]; absolute, relative to
      --entrypoint-cwd, or a bare name looked up in --entrypoint-env-path.
      The daemon refuses a shell, a multi-call binary, the loader or a
      script (unsafe_program).
  --entrypoint-root DIR
      Required with --entrypoint: the host path of the directory the
      container sees as / (/proc/INIT/root/ROOTFS).
  --entrypoint-env-path PATH
      The container's PATH, for a bare --entrypoint name.
  --entrypoint-cwd DIR
      The container's working directory.
  --file FILE|-
      The whole request as one JSON object, from FILE or from standard
      input (-), at most 1 MiB; no other request flag may be given with
      it. Keys: those of POST /v1/containers (enforcerd daemon --help,
      docs/api.md): id, cgroup, pid, role, ceiling, ceiling_fields,
      parent, audit_only, tool_groups, proxy_allow, allow_connect,
      write_roots, exec_allow, allow_devices, own_terminals,
      deny_console_egress, activate, init_pid, setup_program,
      container_spec, entrypoint {path, root, env_path, cwd}. Text that
      is not JSON is a usage error.

` + ctlCommonFlags + `
` + ctlExitStatus

const ctlDenialsHelp = `Usage:
  enforcerd ctl denials [--socket PATH] [--json] [--follow]
                        [--container ID | --cgroup-id N]

Print the denial records: without --follow, the last ones the daemon
kept (GET /v1/denials/recent, at most 1024 since it started, oldest
first); with --follow, each new record as the daemon reads it from the
kernel (GET /v1/denials), until interrupted (Ctrl-C, SIGINT or SIGTERM:
exit 0). Records include the daemon's own decisions (hook "enforcerd":
registered, narrowed, activated, frozen, killed) and, for audit-only
containers, what would have been denied (decision "audited").

Columns: TIME (RFC 3339, UTC), CONTAINER, CGROUP-ID (the process's own
cgroup), PID, COMM, HOOK (the kernel LSM or cgroup hook, as the kernel
names it), RULE (the protection that decided, docs/audit.md), OPERATION,
FIELD (network, write, shell or tamper), DECISION (and the daemon's reason),
ERROR (the errno returned, e.g. EPERM), OBJECT (path, address or
program). A value holding a control character is printed Go-quoted, so
that a name chosen inside a sandbox cannot forge rows. A summary (the
denials of one kind in a second that no record of their own stands for)
reads "(summary)" in COMM and its number in DECISION ("denied+40"). With
--follow the columns have fixed widths (a longer value pushes the rest of
its row right), since the rows to come cannot be measured.

With --json: {"denials": [...]} without --follow; one JSON record per
line with it (the API's stream, for jq and log shippers).

Flags:
  -f, --follow
      Follow: stream new records until interrupted. The daemon closing
      the stream (stopped, restarted) is exit 1.
  --container ID
      Only the records of this registered container (not_found when it
      is not registered).
  --cgroup-id N
      Only the records whose process cgroup or deciding registered
      cgroup has id N (the inode number of its cgroup2 directory: stat
      -c %i /sys/fs/cgroup/PATH).

` + ctlCommonFlags + `
` + ctlExitStatus
