package denial

import "fmt"

// Rule names the protection that decided a denial (Denial.Rule): one of a
// closed set (AllRules, docs/audit.md). The field rules (RuleNetwork,
// RuleWrite, RuleShellNone, RuleShellReadOnly) are the ceiling fields
// themselves; the others are the escape and tamper protections every
// registration implies (field "tamper"), and two refinements of the shell
// field. Records carry enum rule_id of bpf/event.h in the bits
// RULE_SHIFT and up of their deny bit.
type Rule string

// The rules.
const (
	RuleNetwork         Rule = "network"           // network=false
	RuleWrite           Rule = "write"             // write=false (and a read_only shell's exec'd processes)
	RuleShellNone       Rule = "shell-none"        // shell=none: exec of a file off the allow list
	RuleShellReadOnly   Rule = "shell-read-only"   // shell=read_only: exec of a file the sandbox wrote
	RuleTamper          Rule = "tamper"            // a tamper record of a program older than schema 3
	RuleBPFSyscall      Rule = "bpf-syscall"       // bpf(2)
	RulePtraceOutside   Rule = "ptrace-outside"    // ptrace of, or PTRACE_TRACEME to, a process outside
	RuleSignalOutside   Rule = "signal-outside"    // a signal to a process outside
	RuleSigioOwner      Rule = "sigio-owner"       // I/O signals to a process outside (F_SETOWN, FIOSETOWN, O_ASYNC, SIGIO)
	RuleKernelSetting   Rule = "kernel-setting"    // a write to a kernel interface filesystem (/proc/sys, sysfs, ...)
	RuleCgroupOutside   Rule = "cgroup-outside"    // a cgroup outside the sandbox subtree (incl. moving out)
	RuleCgroupOwnLimits Rule = "cgroup-own-limits" // the registered cgroup's own resource files
	RuleProcOutside     Rule = "proc-outside"      // /proc/<pid> of a process outside
	RuleProcPIDFile     Rule = "proc-pid-file"     // a /proc/<pid> file acting beyond its process (autogroup)
	RuleKmsg            Rule = "kmsg"              // a write to /dev/kmsg
	RuleMount           Rule = "mount"             // a change of the mount table
	RuleCapability      Rule = "capability"        // a capability off the allow list
	RuleKernelModule    Rule = "kernel-module"     // a kernel module load request
	RuleProcessOutside  Rule = "process-outside"   // priority, scheduling or limits of a process outside
	RuleCoreDumpLimit   Rule = "core-dump-limit"   // RLIMIT_CORE other than 1 (core-dump pipe helpers)
	RuleURingCmd        Rule = "uring-cmd"         // io_uring command passthrough
	RuleIPCOutside      Rule = "ipc-outside"       // an IPC object (SysV, POSIX message queue, POSIX shm or semaphore) created outside
	RuleOwnerUnrecorded Rule = "owner-unrecorded"  // an IPC object or key whose creator, or a descriptor whose signal arrangement, could not be recorded
	RuleKeyRequestAuth  Rule = "key-request-auth"  // a request_key authorisation key
	RuleKeyOutside      Rule = "key-outside"       // a key created outside
	RulePinRemoval      Rule = "pin-removal"       // removing or replacing a bpffs pin
	RuleKernelAttr      Rule = "kernel-attr"       // attributes of a kernel interface file
	RuleRawStorage      Rule = "raw-storage"       // raw block device or passthrough storage writes
	RuleTTYInject       Rule = "tty-inject"        // terminal input injection, console state
	RuleCodeMapping     Rule = "code-mapping"      // shell: an executable mapping of a memfd or written file
	RuleShellPtrace     Rule = "shell-ptrace"      // shell=read_only: ptrace of a process that may write
	RuleExecOpen        Rule = "exec-open"         // shell: an open for exec of an unlisted program interpreter (or a written file)
	RuleTaskName        Rule = "task-name"         // setting the task name (prctl PR_SET_NAME)
	RuleHostDevice      Rule = "host-device"       // a device node off the allow list (null-like, own terminals, Entry.AllowDevices)
	RuleTerminalOutside Rule = "terminal-outside"  // a terminal neither declared own nor created inside, beyond a read-only query
	RuleConsoleEgress   Rule = "console-egress"    // network=false with DenyConsoleEgress: an own terminal that leaves the machine
)

// AllRules is the closed set of rules, field rules first, then the others
// in enum rule_id order (bpf/event.h; enforcer decodes a record's rule id
// by this order and its tests check it against bpf2go's constants).
var AllRules = []Rule{
	RuleNetwork, RuleWrite, RuleShellNone, RuleShellReadOnly, RuleTamper,
	RuleBPFSyscall, RulePtraceOutside, RuleSignalOutside, RuleSigioOwner, RuleKernelSetting,
	RuleCgroupOutside, RuleCgroupOwnLimits, RuleProcOutside, RuleProcPIDFile, RuleKmsg,
	RuleMount, RuleCapability, RuleKernelModule, RuleProcessOutside, RuleCoreDumpLimit,
	RuleURingCmd, RuleIPCOutside, RuleOwnerUnrecorded, RuleKeyRequestAuth, RuleKeyOutside,
	RulePinRemoval, RuleKernelAttr, RuleRawStorage, RuleTTYInject, RuleCodeMapping,
	RuleShellPtrace, RuleExecOpen, RuleTaskName, RuleHostDevice, RuleTerminalOutside,
	RuleConsoleEgress,
}

// fieldRules is how many of AllRules, at its start, are field rules (and
// RuleTamper): the rest are numbered by enum rule_id from 1.
const fieldRules = 5

// RuleByID is the rule of a record's rule id (enum rule_id of bpf/event.h,
// 1 and up; 0, RULE_FIELD, names none: the deny bit's field decides), or
// "rule(N)" for an id this build does not know.
func RuleByID(id uint32) Rule {
	if id >= 1 && int(id) <= len(AllRules)-fieldRules {
		return AllRules[fieldRules-1+int(id)]
	}
	return Rule(fmt.Sprintf("rule(%d)", id))
}

// ruleOperations is the operation a record of a rule shows where it says
// more than its hook's (Denial.Operation).
var ruleOperations = map[Rule]string{
	RuleSigioOwner:      "set-signal-owner",
	RuleKernelSetting:   "write-kernel-setting",
	RuleCgroupOutside:   "write-outside-cgroup",
	RuleCgroupOwnLimits: "write-cgroup-limits",
	RuleProcOutside:     "write-process-state",
	RuleProcPIDFile:     "write-process-state",
	RuleKmsg:            "write-kernel-log",
	RuleProcessOutside:  "change-process-limits",
	RulePinRemoval:      "remove-pin",
	RuleRawStorage:      "raw-storage-write",
	RuleTTYInject:       "tty-inject",
	RuleCodeMapping:     "map-executable",
	RuleExecOpen:        "exec-interpreter",
	RuleTaskName:        "set-task-name",
	RuleHostDevice:      "use-device",
	RuleTerminalOutside: "use-terminal",
	RuleConsoleEgress:   "write-console",
}

// Operation is what a denial at hook h decided by rule r attempted: the
// rule's operation where it says more than the hook's (a write at
// file_permission to /dev/kmsg reads "write-kernel-log"), else the hook's.
func (r Rule) Operation(h Hook) string {
	if op := ruleOperations[r]; op != "" {
		return op
	}
	return h.Operation()
}
