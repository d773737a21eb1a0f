package verdict

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The selftest guest's package (scripts/vmtest-guest/selftest) and what its
// tests must do there: one passes, one fails, one skips.
const (
	SelftestPackage  = "selftest"
	SelftestPasses   = "TestSelftestPasses"
	SelftestMustFail = "TestSelftestMustFail"
	SelftestMustSkip = "TestSelftestMustNotSkip"
)

// CheckSelftest checks one run of `scripts/vmtest --selftest-guest`: its
// combined output (the guest's console and the host's report) and its exit
// status. It proves the harness fails on a failing or skipping guest test:
// the run must exit non-zero, the guest must have run the three selftest
// tests with the expected outcomes, the positive control must have passed,
// and the report must name the failed and the skipped test. convert turns a
// section into test2json events (Convert in production). It returns the
// problems found; none means the selftest passed.
func CheckSelftest(output []byte, status int, convert func(Section) ([]Event, error)) []string {
	var problems []string
	if status == 0 {
		problems = append(problems, "scripts/vmtest exited 0 on a failing guest")
	}
	c, err := ParseConsole(bytes.NewReader(output))
	if err != nil {
		return append(problems, err.Error())
	}
	var pkg *Package
	for _, s := range c.Sections {
		if s.Package != SelftestPackage {
			continue
		}
		evs, err := convert(s)
		if err != nil {
			return append(problems, err.Error())
		}
		p := Summarize(s, evs)
		pkg = &p
	}
	if pkg == nil {
		problems = append(problems, "the guest did not run the "+SelftestPackage+" package")
	} else {
		if !slices.Contains(pkg.FailedTests, SelftestMustFail) {
			problems = append(problems, "guest did not report "+SelftestMustFail+" failing")
		}
		if !slices.Contains(pkg.SkippedTests, SelftestMustSkip) {
			problems = append(problems, "guest did not report "+SelftestMustSkip+" skipping")
		}
		if !slices.Contains(pkg.PassedTests, SelftestPasses) {
			problems = append(problems, "guest did not run "+SelftestPasses)
		}
	}
	lines := strings.Split(strings.ReplaceAll(string(output), "\r", ""), "\n")
	has := func(prefix string, words ...string) bool {
		for _, l := range lines {
			if !strings.HasPrefix(l, prefix) {
				continue
			}
			all := true
			for _, w := range words {
				all = all && strings.Contains(l, w)
			}
			if all {
				return true
			}
		}
		return false
	}
	if !has("vmtest: FAIL: ", "failed", SelftestMustFail) {
		problems = append(problems, fmt.Sprintf("host did not name the failed test (%s)", SelftestMustFail))
	}
	if !has("vmtest: FAIL: ", "skipped", SelftestMustSkip) {
		problems = append(problems, fmt.Sprintf("host did not name the skipped test (%s)", SelftestMustSkip))
	}
	if !has("vmtest-control: PASS") {
		problems = append(problems, "positive control did not pass")
	}
	return problems
}
