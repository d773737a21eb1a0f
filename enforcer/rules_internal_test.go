package enforcer

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
)

func rawEvent(t *testing.T, hook denial.Hook, denyBit uint32) []byte {
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
	want := map[denial.Hook]string{
		denial.HookTaskSetnice: "task_setnice", denial.HookTaskSetioprio: "task_setioprio", denial.HookTaskSetscheduler: "task_setscheduler",
		denial.HookTaskPrlimit: "task_prlimit", denial.HookFileSendSigiotask: "file_send_sigiotask", denial.HookTaskKill: "task_kill", denial.HookFileReceive: "file_receive", denial.HookTaskSetpgid: "task_setpgid",
		denial.HookFileFcntl: "file_fcntl", denial.HookFileIoctl: "file_ioctl", denial.HookFileIoctlCompat: "file_ioctl_compat",
		denial.HookShmShmctl: "shm_shmctl", denial.HookMsgQueueMsgctl: "msg_queue_msgctl", denial.HookSemSemctl: "sem_semctl",
		denial.HookShmAssociate: "shm_associate", denial.HookMsgQueueAssociate: "msg_queue_associate", denial.HookSemAssociate: "sem_associate",
		denial.HookShmAllocSecurity: "shm_alloc_security", denial.HookMsgQueueAllocSecurity: "msg_queue_alloc_security",
		denial.HookSemAllocSecurity: "sem_alloc_security", denial.HookIPCPermission: "ipc_permission", denial.HookInodePermission: "inode_permission",
		denial.HookFilePermission: "file_permission", denial.HookInodeUnlink: "inode_unlink", denial.HookInodeRename: "inode_rename",
		denial.HookInodeRmdir: "inode_rmdir", denial.HookMmapFile: "mmap_file", denial.HookFileMprotect: "file_mprotect",
		denial.HookCgroupConnect4: "cgroup/connect4", denial.HookBprmCheckSecurity: "bprm_check_security",
	}
	for h, name := range want {
		d, err := decodeEvent(rawEvent(t, h, denyTamper|uint32(bpf.SharedRuleIdRULE_MOUNT)<<ruleShift))
		if err != nil {
			t.Fatal(err)
		}
		if d.Hook.String() != name || d.Hook != h || d.Hook.Legacy() {
			t.Errorf("hook %d decodes as %q (legacy %t), want %q", h, d.Hook, d.Hook.Legacy(), name)
		}
		if d.Field != "tamper" || d.Rule != denial.RuleMount {
			t.Errorf("hook %s: field %q rule %q, want tamper mount", name, d.Field, d.Rule)
		}
	}
	for _, h := range denial.AllHooks {
		if n := h.String(); n == "" || strings.HasPrefix(n, "hook(") {
			t.Errorf("hook %d has no name", h)
		}
	}
}

// TestDecodeRules: every rule id decodes to its name, and the operation the
// record shows is the rule's where it has one; without a rule id the field
// rules apply, and the legacy ids of older programs keep their protection.
func TestDecodeRules(t *testing.T) {
	ids := map[bpf.SharedRuleId]denial.Rule{
		bpf.SharedRuleIdRULE_BPF_SYSCALL: denial.RuleBPFSyscall, bpf.SharedRuleIdRULE_PTRACE_OUTSIDE: denial.RulePtraceOutside,
		bpf.SharedRuleIdRULE_SIGNAL_OUTSIDE: denial.RuleSignalOutside, bpf.SharedRuleIdRULE_SIGIO_OWNER: denial.RuleSigioOwner,
		bpf.SharedRuleIdRULE_KERNEL_SETTING: denial.RuleKernelSetting, bpf.SharedRuleIdRULE_CGROUP_OUTSIDE: denial.RuleCgroupOutside,
		bpf.SharedRuleIdRULE_CGROUP_OWN_LIMITS: denial.RuleCgroupOwnLimits, bpf.SharedRuleIdRULE_PROC_OUTSIDE: denial.RuleProcOutside,
		bpf.SharedRuleIdRULE_PROC_PID_FILE: denial.RuleProcPIDFile, bpf.SharedRuleIdRULE_KMSG: denial.RuleKmsg,
		bpf.SharedRuleIdRULE_MOUNT: denial.RuleMount, bpf.SharedRuleIdRULE_CAPABILITY: denial.RuleCapability,
		bpf.SharedRuleIdRULE_KERNEL_MODULE: denial.RuleKernelModule, bpf.SharedRuleIdRULE_PROCESS_OUTSIDE: denial.RuleProcessOutside,
		bpf.SharedRuleIdRULE_CORE_DUMP_LIMIT: denial.RuleCoreDumpLimit, bpf.SharedRuleIdRULE_URING_CMD: denial.RuleURingCmd,
		bpf.SharedRuleIdRULE_IPC_OUTSIDE: denial.RuleIPCOutside, bpf.SharedRuleIdRULE_OWNER_UNRECORDED: denial.RuleOwnerUnrecorded,
		bpf.SharedRuleIdRULE_KEY_REQUEST_AUTH: denial.RuleKeyRequestAuth, bpf.SharedRuleIdRULE_KEY_OUTSIDE: denial.RuleKeyOutside,
		bpf.SharedRuleIdRULE_PIN_REMOVAL: denial.RulePinRemoval, bpf.SharedRuleIdRULE_KERNEL_ATTR: denial.RuleKernelAttr,
		bpf.SharedRuleIdRULE_RAW_STORAGE: denial.RuleRawStorage, bpf.SharedRuleIdRULE_TTY_INJECT: denial.RuleTTYInject,
		bpf.SharedRuleIdRULE_CODE_MAPPING: denial.RuleCodeMapping, bpf.SharedRuleIdRULE_SHELL_PTRACE: denial.RuleShellPtrace,
		bpf.SharedRuleIdRULE_EXEC_OPEN:        denial.RuleExecOpen,
		bpf.SharedRuleIdRULE_TASK_NAME:        denial.RuleTaskName,
		bpf.SharedRuleIdRULE_HOST_DEVICE:      denial.RuleHostDevice,
		bpf.SharedRuleIdRULE_TERMINAL_OUTSIDE: denial.RuleTerminalOutside,
		bpf.SharedRuleIdRULE_CONSOLE_EGRESS:   denial.RuleConsoleEgress,
	}
	if len(ids) != len(denial.AllRules)-5 {
		t.Fatalf("test covers %d rule ids, denial.AllRules has %d (and 5 field rules)", len(ids), len(denial.AllRules)-5)
	}
	for id, r := range ids {
		d, err := decodeEvent(rawEvent(t, denial.HookFilePermission, denyTamper|uint32(id)<<ruleShift))
		if err != nil {
			t.Fatal(err)
		}
		if d.Rule != r || d.Field != "tamper" {
			t.Errorf("rule id %d: rule %q field %q, want %q tamper", id, d.Rule, d.Field, r)
		}
	}
	for _, c := range []struct {
		hook denial.Hook
		bit  uint32
		rule denial.Rule
		op   string
	}{
		{denial.HookFilePermission, denyTamper | uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift, denial.RuleKmsg, "write-kernel-log"},
		{denial.HookFileIoctlCompat, denyTamper | uint32(bpf.SharedRuleIdRULE_TTY_INJECT)<<ruleShift, denial.RuleTTYInject, "tty-inject"},
		{denial.HookTaskSetnice, denyTamper | uint32(bpf.SharedRuleIdRULE_PROCESS_OUTSIDE)<<ruleShift, denial.RuleProcessOutside, "change-process-limits"},
		{denial.HookCapable, denyTamper | uint32(bpf.SharedRuleIdRULE_CAPABILITY)<<ruleShift, denial.RuleCapability, "use-capability"},
		{denial.HookSocketConnect, denyNetwork, denial.RuleNetwork, "connect"},
		{denial.HookInodeCreate, denyWrite, denial.RuleWrite, "create"},
		{denial.HookBprmCheckSecurity, denyShell, denial.RuleShellNone, "exec"},
		{denial.HookBprmCheckSecurity, denyShellWrite, denial.RuleShellReadOnly, "exec"},
		{denial.HookMmapFile, denyShell | uint32(bpf.SharedRuleIdRULE_CODE_MAPPING)<<ruleShift, denial.RuleCodeMapping, "map-executable"},
		// Records of programs older than schema 3.
		{denial.HookFileIoctl, denyTamper, denial.RuleTamper, "ioctl"},
		{denial.Hook(bpf.SharedHookIdHOOK_KMSG_WRITE), denyTamper, denial.RuleKmsg, "write-kernel-log"},
		{denial.Hook(bpf.SharedHookIdHOOK_TTY_IOCTL), denyTamper, denial.RuleTTYInject, "tty-inject"},
		{denial.Hook(bpf.SharedHookIdHOOK_BPFFS_UNLINK), denyTamper, denial.RulePinRemoval, "remove-pin"},
		{denial.Hook(bpf.SharedHookIdHOOK_KERNEL_SETTING), denyTamper, denial.RuleKernelSetting, "write-kernel-setting"},
		{denial.Hook(bpf.SharedHookIdHOOK_PROC_WRITE), denyTamper, denial.RuleProcOutside, "write-process-state"},
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
	a, _ := decodeEvent(rawEvent(t, denial.HookFilePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift))
	b, _ := decodeEvent(rawEvent(t, denial.HookFilePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_RAW_STORAGE)<<ruleShift))
	c, _ := decodeEvent(rawEvent(t, denial.HookInodePermission, denyTamper|uint32(bpf.SharedRuleIdRULE_KMSG)<<ruleShift))
	if a.Key == b.Key || a.Key == c.Key {
		t.Fatalf("keys of different rules or hooks are equal: %+v %+v %+v", a.Key, b.Key, c.Key)
	}
	if a.Key.Hook != uint16(denial.HookFilePermission) || a.Key.DenyBit>>ruleShift != uint32(bpf.SharedRuleIdRULE_KMSG) {
		t.Fatalf("key %+v", a.Key)
	}
}
