package enforcer

import (
	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
)

// ruleShift is where a record's rule starts in its deny bit.
const ruleShift = uint32(bpf.SharedRuleLayoutRULE_SHIFT)

// ruleOf decodes the rule of a record's (or tally key's) hook and deny bit
// (with the rule id above ruleShift: denial.RuleByID). Without a rule id
// the deny bit's field rule applies; a tamper record without one comes
// from an older program: the legacy hook's rule, or denial.RuleTamper.
func ruleOf(h denial.Hook, denyBit uint32) denial.Rule {
	if id := denyBit >> ruleShift; id != uint32(bpf.SharedRuleIdRULE_FIELD) {
		return denial.RuleByID(id)
	}
	switch denyBit & (1<<ruleShift - 1) {
	case denyNetwork:
		return denial.RuleNetwork
	case denyWrite:
		return denial.RuleWrite
	case denyShell:
		return denial.RuleShellNone
	case denyShellWrite:
		return denial.RuleShellReadOnly
	case denyTamper:
		if r := h.LegacyRule(); r != "" {
			return r
		}
		return denial.RuleTamper
	}
	return ""
}
