// Package surface is "enforcerd surface": the tool surface and kernel
// ceiling the policy core computes for a role. It imports the library
// packages and cmd/enforcerd/cli, no other command's package.
package surface

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const surfaceHelp = `Usage:
  enforcerd surface [--role R] [--session CEILING] [--tool-groups G,...] [--json]

Print what an agent of role R is given inside a session: its effective
permission ceiling, the tool lists its model sees, the authority
fingerprint, and the kernel ceiling enforcerd installs for its container.
Everything comes from one resolution in the policy core, so the tools and
the kernel cannot disagree. Nothing is loaded or changed; this command
needs no privileges.

Flags:
  --role R
      Role name. Canonical roles: general, explore, planner, reviewer,
      implement, test, advisor, custom. Legacy aliases (worker, scout,
      plan, review, builder, verifier, consultant, ...) and org-chart
      titles (manager, coordinator, operator, synthesizer, summarizer,
      reducer, smoke-runner, read-only) are accepted; a title keeps its
      own label. The name is trimmed and ASCII case-insensitive. Any
      other name, and an empty one, is an error (exit 2) that lists the
      valid names. Without --role: general.
  --session CEILING
      The session (parent) ceiling the role is clamped to, as ceiling
      text. Default: network=true,write=true,shell=full,tools=true,depth=1.
      Keys given override the default; keys left out keep it.
  --tool-groups G,...
      Comma-separated tool groups: messaging, meta, inbox, lifecycle,
      approvals, scheduling, forge, execution, web_tools. Unknown names
      are skipped with a warning. Empty or absent means the agent default
      (messaging,meta,inbox,execution).
  --json
      Print one JSON object (below) instead of the readable summary.
  -h, --help
      Print this help.

Ceiling text:
  KEY=VALUE[,KEY=VALUE]...   each key at most once, in any order
    network=BOOL   may reach the network
    write=BOOL     may modify files
    shell=none|read_only|full
                   none: no exec beyond the entrypoint and an allow list;
                   read_only: exec, but started processes cannot write;
                   full: unrestricted exec
    tools=BOOL     sees any tool at all
    depth=N        further delegation levels, 0..4294967295
  BOOL is true|false or allow|deny; values are ASCII case-insensitive,
  keys are lower case. Unknown keys, repeated keys, empty items and bad
  values are errors naming the field.

Ceiling of a role: the role's requested ceiling clamped (field-wise
meet) to the session:
    role       write network shell
    general    yes   yes     full
    explore    no    yes     read_only
    planner    no    yes     read_only
    reviewer   no    no      read_only
    implement  yes   yes     full
    test       no    no      full
    advisor    no    yes     none
    custom     yes   yes     full
  Every role asks for tools=true. Requested depth is the session depth
  minus one (floor 0) for general, implement and custom, 0 otherwise.

JSON fields (stable):
  role                    canonical role
  label                   public label (an org-chart title keeps its own)
  posture_role            role governing the tool posture
  ceiling                 {network, write, shell, tools, delegation_depth}
  write_authority         workspace_write | read_only
  allowed_tools           null = inherit the parent surface, [] = no tools
  disallowed_tools        deny entries and prefix* globs (case-insensitive),
                          sorted, de-duplicated; deny wins over allow
  fingerprint             v1;posture=..;write=..;depth=..;tools=..;
                          network=..;shell=..;allow=..;deny=..
  builtin_tools           built-in tool list (the --tools value)
  subagent_builtin_tools  built-in tool list of a subagent (adds Bash with
                          the execution group)
  mcp_allowed_tools       MCP allow list (mcp__hyperhive__ names)
  kernel                  {network, write, shell}: what enforcerd installs
  warnings                non-fatal findings, e.g. skipped tool groups
  The three tool lists only hold tools the authority allows (none that
  disallowed_tools matches) and none that the kernel ceiling makes fail:
    kernel.write=false  builtin_tools and subagent_builtin_tools omit
                        Write, Edit, MultiEdit, NotebookEdit
    kernel.shell=none   builtin_tools and subagent_builtin_tools omit
                        Bash; mcp_allowed_tools omits the bash MCP
                        server's tools (mcp__bash__*)
  With tools=false they are empty and the agent must start without tools.

Exit status:
  0  success (warnings are printed to stderr and listed in "warnings")
  2  usage error: bad flag, stray argument, bad --session text, or a
     --role that is not a role name
`

func NewCommand(s cli.Streams) *cobra.Command {
	var role, session, groups string
	var asJSON bool
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "surface",
		Summary: "print the tool surface and kernel ceiling the policy core computes for a role",
		Help:    surfaceHelp,
		Run: func(c *cobra.Command, _ []string) error {
			res := policy.UnspecifiedRole()
			if c.Flags().Changed("role") {
				var err error
				if res, err = policy.LookupRole(role); err != nil {
					return cli.UsageErrorf("--role: %w", err)
				}
			}
			ceiling, err := policy.ParseCeiling(session, policy.DefaultSession())
			if err != nil {
				return cli.UsageErrorf("--session: %w", err)
			}
			return runSurface(s, policy.ResolveSurface(res, ceiling, groups), asJSON)
		},
	})
	fs := c.Flags()
	cli.RoleFlag(fs, &role)
	fs.StringVar(&session, "session", "", "the session ceiling the role is clamped to, as ceiling text")
	fs.StringVar(&groups, "tool-groups", "", "comma-separated tool groups")
	cli.JsonFlag(fs, &asJSON)
	return c
}

// runSurface prints the surface policy.ResolveSurface computed: JSON or
// a summary, its warnings on stderr.
func runSurface(s cli.Streams, sf policy.Surface, asJSON bool) error {
	for _, w := range sf.Warnings {
		fmt.Fprintf(s.Err, "enforcerd surface: warning: %s\n", w)
	}
	if asJSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(sf)
	}
	PrintSurface(s.Out, sf)
	return nil
}

func PrintSurface(w io.Writer, s policy.Surface) {
	list := func(l []string) string {
		if len(l) == 0 {
			return "(none)"
		}
		return strings.Join(l, ",")
	}
	allowed := "inherit"
	if s.AllowedTools != nil {
		allowed = list(s.AllowedTools)
	}
	fmt.Fprintf(w, "role:                   %s (label %q, posture %s)\n", s.Role, s.Label, s.PostureRole)
	fmt.Fprintf(w, "ceiling:                %s\n", s.Ceiling)
	fmt.Fprintf(w, "kernel:                 %s\n", s.Kernel)
	fmt.Fprintf(w, "write authority:        %s\n", s.WriteAuthority)
	fmt.Fprintf(w, "allowed tools:          %s\n", allowed)
	fmt.Fprintf(w, "disallowed tools:       %s\n", list(s.DisallowedTools))
	fmt.Fprintf(w, "builtin tools:          %s\n", list(s.BuiltinTools))
	fmt.Fprintf(w, "subagent builtin tools: %s\n", list(s.SubagentBuiltinTools))
	fmt.Fprintf(w, "mcp allowed tools:      %s\n", list(s.MCPAllowedTools))
	fmt.Fprintf(w, "fingerprint:            %s\n", s.Fingerprint)
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning:                %s\n", warning)
	}
}
