package enforcer

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/bpf"
)

func rawEvent(t *testing.T, hook Hook, denyBit uint32) []byte {
	t.Helper()
	var ev bpf.SharedEvent
	ev.Hook = uint16(hook)
	ev.Decision = uint16(bpf.SharedDecisionDECISION_DENIED)
	ev.Err = 1
	ev.DenyBit = denyBit
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, ev); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeHookNames: a record of each hook id decodes to the kernel's
// exact name of the hook (the programs that were aliased in schema 2
// included), and a record's field and rule come from its deny bit.
func TestDecodeHookNames(t *testing.T) {
	want := map[Hook]string{
		HookTaskSetnice: "task_setnice", HookTaskSetioprio: "task_setioprio", HookTaskSetscheduler: "task_setscheduler",
		HookTaskPrlimit: "task_prlimit", HookFileSendSigiotask: "file_send_sigiotask", HookTaskKill: "task_kill",
		HookFileFcntl: "file_fcntl", HookFileIoctl: "file_ioctl", HookFileIoctlCompat: "file_ioctl_compat",
		HookShmShmctl: "shm_shmctl", HookMsgQueueMsgctl: "msg_queue_msgctl", HookSemSemctl: "sem_semctl",
		HookShmAssociate: "shm_associate", HookMsgQueueAssociate: "msg_queue_associate", HookSemAssociate: "sem_associate",
		HookShmAllocSecurity: "shm_alloc_security", HookMsgQueueAllocSecurity: "msg_queue_alloc_security",
		HookSemAllocSecurity: "sem_alloc_security", HookIPCPermission: "ipc_permission", HookInodePermission: "inode_permission",
		HookFilePermission: "file_permission", HookInodeUnlink: "inode_unlink", HookInodeRename: "inode_rename",
		HookInodeRmdir: "inode_rmdir", HookMmapFile: "mmap_file", HookFileMprotect: "file_mprotect",
		HookCgroupConnect4: "cgroup/connect4", HookBprmCheckSecurity: "bprm_check_security",
	}
	for h, name := range want {
		d, err := decodeEvent(rawEvent(t, h, denyTamper|uint32(bpf.SharedRuleIdRULE_MOUNT)<<ruleShift))
		if err != nil {
			t.Fatal(err)
		}
		if d.Hook.String() != name || d.Hook != h || d.Hook.Legacy() {
			t.Errorf("hook %d decodes as %q (legacy %t), want %q", h, d.Hook, d.Hook.Legacy(), name)
		}
		if d.Field != "tamper" || d.Rule != RuleMount {
			t.Errorf("hook %s: field %q rule %q, want tamper mount", name, d.Field, d.Rule)
		}
	}
	for _, h := range AllHooks {
		if n := h.String(); n == "" || strings.HasPrefix(n, "hook(") {
			t.Errorf("hook %d has no name", h)
		}
	}
}

// TestDecodeRules: every rule id decodes to its name, and the operation the
// record shows is the rule's where it has one; without a rule id the field
// rules apply, and the legacy ids of older programs keep their protection.
func TestDecodeRules(t *testing.T) {
	ids := map[bpf.SharedRuleId]Rule{
		bpf.SharedRuleIdRULE_BPF_SYSCALL: RuleBPFSyscall, bpf.SharedRuleIdRULE_PTRACE_OUTSIDE: RulePtraceOutside,
		bpf.SharedRuleIdRULE_SIGNAL_OUTSIDE: RuleSignalOutside, bpf.SharedRuleIdRULE_SIGIO_OWNER: RuleSigioOwner,
		bpf.SharedRuleIdRULE_KERNEL_SETTING: RuleKernelSetting, bpf.SharedRuleIdRULE_CGROUP_OUTSIDE: RuleCgroupOutside,
		bpf.SharedRuleIdRULE_CGROUP_OWN_LIMITS: RuleCgroupOwnLimits, bpf.SharedRuleIdRULE_PROC_OUTSIDE: RuleProcOutside,
		bpf.SharedRuleIdRULE_PROC_PID_FILE: RuleProcPIDFile, bpf.SharedRuleIdRULE_KMSG: RuleKmsg,
		bpf.SharedRuleIdRULE_MOUNT: RuleMount, bpf.SharedRuleIdRULE_CAPABILITY: RuleCapability,
		bpf.SharedRuleIdRULE_KERNEL_MODULE: RuleKernelModule, bpf.SharedRuleIdRULE_PROCESS_OUTSIDE: RuleProcessOutside,
		bpf.SharedRuleIdRULE_CORE_DUMP_LIMIT: RuleCoreDumpLimit, bpf.SharedRuleIdRULE_URING_CMD: RuleURingCmd,
		bpf.SharedRuleIdRULE_IPC_OUTSIDE: RuleIPCOutside, bpf.SharedRuleIdRULE_OWNER_UNRECORDED: RuleOwnerUnrecorded,
		bpf.SharedRuleIdRULE_KEY_REQUEST_AUTH: RuleKeyRequestAuth, bpf.SharedRuleIdRULE_KEY_OUTSIDE: RuleKeyOutside,
		bpf.SharedRuleIdRULE_PIN_REMOVAL: RulePinRemoval, bpf.SharedRuleIdRULE_KERNEL_ATTR: RuleKernelAttr,
		bpf.SharedRuleIdRULE_RAW_STORAGE: RuleRawStorage, bpf.SharedRuleIdRULE_TTY_INJECT: RuleTTYInject,
		bpf.SharedRuleIdRULE_CODE_MAPPING: RuleCodeMapping, bpf.SharedRuleIdRULE_SHELL_PTRACE: RuleShellPtrace,
		bpf.SharedRuleIdRULE_EXEC_OPEN:        RuleExecOpen,
		bpf.SharedRuleIdRULE_TASK_NAME:        RuleTaskName,
		bpf.SharedRuleIdRULE_HOST_DEVICE:      RuleHostDevice,
		bpf.SharedRuleIdRULE_TERMINAL_OUTSIDE: RuleTerminalOutside,
		bpf.SharedRuleIdRULE_CONSOLE_EGRESS:   RuleConsoleEgress,
	}
	if len(ids) != len(ruleTable) {
		t.Fatalf("test covers %d rule ids, the table has %d", len(ids), len(ruleTable))
	}
	for id, r := range ids {
		d, err := decodeEvent(rawEvent(t, HookFilePermission, denyTamper|uint32(id)<<ruleShift))
		if err != nil {
			t.Fatal(err)
		}
		if d.Rule != r || d.Field != "tamper" {
			t.Errorf("rule id %d: rule %q field %q, want %q tamper", id, d.Rule, d.Field, r)
		}
	}
	for _, c := range []struct {
		hook Hook
		bit  uint32
		rule Rule
		op   string
	}{
		{HookFilePermission, denyTamper | uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift, RuleKmsg, "write-kernel-log"},
		{HookFileIoctlCompat, denyTamper | uint32(bpf.SharedRuleIdRULE_TTY_INJECT)<<ruleShift, RuleTTYInject, "tty-inject"},
		{HookTaskSetnice, denyTamper | uint32(bpf.SharedRuleIdRULE_PROCESS_OUTSIDE)<<ruleShift, RuleProcessOutside, "change-process-limits"},
		{HookCapable, denyTamper | uint32(bpf.SharedRuleIdRULE_CAPABILITY)<<ruleShift, RuleCapability, "use-capability"},
		{HookSocketConnect, denyNetwork, RuleNetwork, "connect"},
		{HookInodeCreate, denyWrite, RuleWrite, "create"},
		{HookBprmCheckSecurity, denyShell, RuleShellNone, "exec"},
		{HookBprmCheckSecurity, denyShellWrite, RuleShellReadOnly, "exec"},
		{HookMmapFile, denyShell | uint32(bpf.SharedRuleIdRULE_CODE_MAPPING)<<ruleShift, RuleCodeMapping, "map-executable"},
		// Records of programs older than schema 3.
		{HookFileIoctl, denyTamper, RuleTamper, "ioctl"},
		{hookLegacyKmsgWrite, denyTamper, RuleKmsg, "write-kernel-log"},
		{hookLegacyTTYIoctl, denyTamper, RuleTTYInject, "tty-inject"},
		{hookLegacyBPFFSUnlink, denyTamper, RulePinRemoval, "remove-pin"},
		{hookLegacyKernelSetting, denyTamper, RuleKernelSetting, "write-kernel-setting"},
		{hookLegacyProcWrite, denyTamper, RuleProcOutside, "write-process-state"},
	} {
		d, err := decodeEvent(rawEvent(t, c.hook, c.bit))
		if err != nil {
			t.Fatal(err)
		}
		if d.Rule != c.rule || d.Operation() != c.op {
			t.Errorf("%s bit %#x: rule %q operation %q, want %q %q", c.hook, c.bit, d.Rule, d.Operation(), c.rule, c.op)
		}
		// The summary of the same distinct denial says the same.
		s := summaryOf(d.Key, 3)
		if s.Rule != d.Rule || s.Operation() != d.Operation() || s.Hook != d.Hook || s.Field != d.Field {
			t.Errorf("%s bit %#x: summary %s/%s/%s/%s, record %s/%s/%s/%s", c.hook, c.bit,
				s.Hook, s.Rule, s.Operation(), s.Field, d.Hook, d.Rule, d.Operation(), d.Field)
		}
	}
}

// TestTallyKeysKeepRulesApart: the same hook, decision and object under two
// rules are two distinct denials (the rule is part of the key's deny bit),
// and the key of a record is what the kernel's tally counted it under.
func TestTallyKeysKeepRulesApart(t *testing.T) {
	a, _ := decodeEvent(rawEvent(t, HookFilePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift))
	b, _ := decodeEvent(rawEvent(t, HookFilePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_RAW_STORAGE)<<ruleShift))
	c, _ := decodeEvent(rawEvent(t, HookInodePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift))
	if a.Key == b.Key || a.Key == c.Key {
		t.Fatalf("keys of different rules or hooks are equal: %+v %+v %+v", a.Key, b.Key, c.Key)
	}
	if a.Key.Hook != uint16(HookFilePermission) || a.Key.DenyBit>>ruleShift != uint32(bpf.SharedRuleIdRULE_KMSG) {
		t.Fatalf("key %+v", a.Key)
	}
}
