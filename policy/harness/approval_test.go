package harness

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

type fixedHandler struct {
	out   ApprovalOutcome
	calls atomic.Int64
}

func (h *fixedHandler) Ask(ApprovalRequest) ApprovalOutcome { h.calls.Add(1); return h.out }

func str(s string) *string { return &s }

func req(tool string, subject *string, args string) ApprovalRequest {
	return ApprovalRequest{Tool: tool, Subject: subject, Args: json.RawMessage(args)}
}

func TestNoHandlerDeniesFailClosed(t *testing.T) {
	if ResolveAsk(NewApprovalCache(), nil, req("bash", str("rm -rf /"), "{}")) {
		t.Fatal("no handler allowed")
	}
	// A nil cache holds nothing and records nothing.
	var nilCache *ApprovalCache
	if ResolveAsk(nilCache, nil, req("bash", str("ls"), "{}")) {
		t.Fatal("nil cache + no handler allowed")
	}
	if !ResolveAsk(nilCache, &fixedHandler{out: ApprovalAllowForSession}, req("bash", str("ls"), "{}")) || nilCache.IsApproved(ApprovalKey("bash", str("ls"))) {
		t.Fatal("nil cache misbehaves")
	}
}

func TestHandlerDenyAndAllowOnceAreNotCached(t *testing.T) {
	for _, out := range []ApprovalOutcome{ApprovalDeny, ApprovalAllow, ApprovalOutcome(9)} {
		c := NewApprovalCache()
		got := ResolveAsk(c, &fixedHandler{out: out}, req("bash", str("ls"), "{}"))
		if got != (out == ApprovalAllow) {
			t.Errorf("outcome %d resolved %v", out, got)
		}
		if c.IsApproved(ApprovalKey("bash", str("ls"))) || c.Len() != 0 {
			t.Errorf("outcome %d was cached", out)
		}
	}
}

func TestAllowForSessionIsCachedAndSkipsTheHandler(t *testing.T) {
	c := NewApprovalCache()
	if !ResolveAsk(c, &fixedHandler{out: ApprovalAllowForSession}, req("bash", str("ls -la"), "{}")) {
		t.Fatal("not allowed")
	}
	if !c.IsApproved(ApprovalKey("bash", str("ls -la"))) {
		t.Fatal("not cached")
	}
	deny := &fixedHandler{out: ApprovalDeny}
	if !ResolveAsk(c, deny, req("bash", str("ls -la"), "{}")) || deny.calls.Load() != 0 {
		t.Fatal("cache hit still consulted the handler")
	}
	if !ResolveAsk(c, nil, req("bash", str("ls -la"), "{}")) {
		t.Fatal("cache hit needs a handler")
	}
}

func TestCacheKeyDistinguishesSubjectsAndTools(t *testing.T) {
	c := &ApprovalCache{} // the zero value works
	c.Approve(ApprovalKey("bash", str("ls -la")))
	if !c.IsApproved(ApprovalKey("bash", str("ls -la"))) ||
		c.IsApproved(ApprovalKey("bash", str("rm -rf /"))) ||
		c.IsApproved(ApprovalKey("write_file", str("ls -la"))) ||
		c.IsApproved(ApprovalKey("bash", nil)) {
		t.Fatal("key does not separate subjects/tools")
	}
}

func TestDecisionToApprovedShortCircuits(t *testing.T) {
	boom := func() bool { panic("must not be called") }
	if DecisionToApproved(RuleDeny, boom) || !DecisionToApproved(RuleAllow, boom) {
		t.Fatal("deny/allow consulted ask")
	}
	if !DecisionToApproved(RuleAsk, func() bool { return true }) || DecisionToApproved(RuleAsk, func() bool { return false }) {
		t.Fatal("ask not honoured")
	}
	if DecisionToApproved(RuleAsk, nil) || DecisionToApproved(RuleDecision(7), func() bool { return true }) {
		t.Fatal("not fail-closed")
	}
}

func TestSessionGrantOnASubjectlessToolDoesNotLeakToOtherArgs(t *testing.T) {
	c := NewApprovalCache()
	allow := &fixedHandler{out: ApprovalAllowForSession}
	safe := req("mcp_db_query", nil, `{"sql":"SELECT 1"}`)
	first := ResolveAsk(c, allow, safe)
	second := ResolveAsk(c, allow, safe)
	if !first || !second || allow.calls.Load() != 1 {
		t.Fatal("same args were not served from the cache")
	}
	if ResolveAsk(c, &fixedHandler{out: ApprovalDeny}, req("mcp_db_query", nil, `{"sql":"DROP TABLE users"}`)) {
		t.Fatal("a grant for one argument set leaked to another")
	}
}

func TestKeyForRequestIsPerArgsAndIgnoresKeyOrder(t *testing.T) {
	a := KeyForRequest(req("q", nil, `{"sql":"SELECT 1"}`))
	b := KeyForRequest(req("q", nil, `{"sql":"DROP TABLE users"}`))
	if a == b {
		t.Fatal("different args, same key")
	}
	x := KeyForRequest(req("q", nil, `{"extra":"same","sql":"SELECT 1"}`))
	y := KeyForRequest(req("q", nil, " {\n \"sql\" : \"SELECT 1\", \"extra\":\"same\"}"))
	if x != y {
		t.Fatalf("key order or white space changed the key: %q %q", x, y)
	}
	// Empty args are the JSON null.
	if KeyForRequest(req("q", nil, "")) != KeyForRequest(req("q", nil, "null")) {
		t.Fatal("empty args differ from null")
	}
}

func TestKeyForRequestWithSubjectIsApprovalKey(t *testing.T) {
	r := req("bash", str("git status"), `{"command":"git status"}`)
	if KeyForRequest(r) != ApprovalKey("bash", str("git status")) {
		t.Fatal("subject-carrying key changed")
	}
	c := NewApprovalCache()
	ResolveAsk(c, &fixedHandler{out: ApprovalAllowForSession}, r)
	if ResolveAsk(c, &fixedHandler{out: ApprovalDeny}, req("bash", str("git push"), `{"command":"git push"}`)) {
		t.Fatal("git status grant leaked to git push")
	}
}

func TestCanonicalJSONSortsNestedObjects(t *testing.T) {
	a, err1 := CanonicalJSON([]byte(`{"z": 1, "a": {"y": 2, "b": 3}, "list": [{"n": 2, "m": 1}]}`))
	b, err2 := CanonicalJSON([]byte(`{"a": {"b": 3, "y": 2}, "z": 1, "list": [{"m": 1, "n": 2}]}`))
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("%q %v / %q %v", a, err1, b, err2)
	}
	if a != `{"a":{"b":3,"y":2},"list":[{"m":1,"n":2}],"z":1}` {
		t.Fatalf("canonical form %s", a)
	}
	if got, _ := CanonicalJSON([]byte(`["<&>", true, null, 1.50, "\u00e9"]`)); got != `["<&>",true,null,1.50,"é"]` {
		t.Fatalf("scalars: %s", got)
	}
	for _, bad := range []string{``, `{`, `{"a":1}x`, `1 2`, `{"a":1,"a":2}`, "\"\xff\"", `"\ud800"`, `{"a" 1}`, `[1,]`} {
		if _, err := CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) accepted", bad)
		}
	}
	// Non-canonicalizable args still key exactly by their bytes.
	d1 := KeyForRequest(req("q", nil, `{"a":1,"a":2}`))
	d2 := KeyForRequest(req("q", nil, `{"a":2,"a":1}`))
	if d1 == d2 || d1 == KeyForRequest(req("q", nil, `{"a":2}`)) {
		t.Fatal("duplicate-key args collide")
	}
	if KeyForRequest(req("q", nil, "\"\xff\"")) == KeyForRequest(req("q", nil, "\"\xfe\"")) {
		t.Fatal("invalid UTF-8 args collide")
	}
}

func TestKeyCollisionProbeIsDistinct(t *testing.T) {
	subjectKey := ApprovalKey("bash", str("x\x00args:{}"))
	colon := KeyForRequest(req("bash:x", nil, "{}"))
	if subjectKey == colon {
		t.Fatal("separator injection collides")
	}
	c := NewApprovalCache()
	c.Approve(KeyForRequest(req("bash", str("x\x00args:{}"), "{}")))
	if c.IsApproved(colon) {
		t.Fatal("one grant covers the other")
	}
	if LengthPrefixed("bash", "x\x00args:{}") == LengthPrefixed("bash:x", "args", "{}") ||
		LengthPrefixed("a:b", "c") == LengthPrefixed("a", "b:c") {
		t.Fatal("length prefixing collides")
	}
	if LengthPrefixed("ab", "c") != "2:ab1:c" || LengthPrefixed() != "" || LengthPrefixed("") != "0:" {
		t.Fatal("encoding changed")
	}
}

// decodeLengthPrefixed is the strict left-to-right decoder the encoding is
// designed for.
func decodeLengthPrefixed(s string) ([]string, bool) {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, ':')
		if i <= 0 {
			return nil, false
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || i+1+n > len(s) {
			return nil, false
		}
		out = append(out, s[i+1:i+1+n])
		s = s[i+1+n:]
	}
	return out, true
}

func TestLengthPrefixedIsInjective(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.OneOf(rapid.String(), rapid.StringMatching(`[0-9:\x00a]{0,6}`))).Draw(t, "parts")
		got, ok := decodeLengthPrefixed(LengthPrefixed(parts...))
		if !ok || !reflect.DeepEqual(got, append([]string{}, parts...)) {
			t.Fatalf("%q decodes to %q", parts, got)
		}
	})
}

func TestApprovalCacheIsSafeForConcurrentUse(t *testing.T) {
	c := NewApprovalCache()
	h := &fixedHandler{out: ApprovalAllowForSession}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				r := req("bash", str(fmt.Sprint(i%50)), "{}")
				if !ResolveAsk(c, h, r) {
					t.Error("denied")
				}
				_ = c.IsApproved(KeyForRequest(r))
				c.Approve(fmt.Sprintf("g%d-%d", g, i%10))
			}
		}(g)
	}
	wg.Wait()
	if c.Len() != 50+16*10 {
		t.Fatalf("Len = %d", c.Len())
	}
	for i := 0; i < 50; i++ {
		if !c.IsApproved(ApprovalKey("bash", str(fmt.Sprint(i)))) {
			t.Fatalf("grant %d lost", i)
		}
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":1,"a":[1,{"d":2,"c":3}]}`, `{"a":1,"a":2}`, `"\ud800"`, `1.0`, `[`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := CanonicalJSON([]byte(in))
		if err != nil {
			return
		}
		if !utf8.ValidString(out) {
			t.Fatal("invalid UTF-8 output")
		}
		again, err := CanonicalJSON([]byte(out))
		if err != nil || again != out {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
	})
}
