package audit

import (
	"encoding/json"
	"testing"

	"github.com/enforcerd/enforcerd/denial"
)

// TestObjectNoneFieldByRule: a record without object carries a number the
// rule names: the ioctl command of tty-inject, the id of ipc-outside, the
// key serial of key-outside, the resource of core-dump-limit; any other
// rule leaves only the kind.
func TestObjectNoneFieldByRule(t *testing.T) {
	for _, tc := range []struct {
		rule denial.Rule
		want string
	}{
		{denial.RuleTTYInject, `{"kind":"none","ioctl_cmd":"0x5412"}`},
		{denial.RuleIPCOutside, `{"kind":"none","ipc_id":21522}`},
		{denial.RuleKeyOutside, `{"kind":"none","key_serial":21522}`},
		{denial.RuleCoreDumpLimit, `{"kind":"none","rlimit_resource":21522}`},
		{denial.RuleShellNone, `{"kind":"none"}`},
	} {
		f := objectFields(denial.HookFileIoctl, tc.rule, denial.Object{Kind: denial.ObjectNone, ID: 0x5412})
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("rule %v: %s, want %s", tc.rule, b, tc.want)
		}
	}
}
