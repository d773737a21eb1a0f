package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ApprovalOutcome is what an approval handler decides for one Ask-tier
// call (seed 002).
type ApprovalOutcome uint8

// The closed approval-outcome vocabulary. The zero value is Deny.
const (
	ApprovalDeny            ApprovalOutcome = iota // refuse this call
	ApprovalAllow                                  // allow this call only
	ApprovalAllowForSession                        // allow, and remember for the session
)

// AllApprovalOutcomes lists every ApprovalOutcome.
var AllApprovalOutcomes = []ApprovalOutcome{ApprovalDeny, ApprovalAllow, ApprovalAllowForSession}

// RuleDecision is the rule engine's verdict on a call before any approval.
type RuleDecision uint8

// The closed rule-decision vocabulary. The zero value is Deny.
const (
	RuleDeny  RuleDecision = iota // hard floor; no handler is consulted
	RuleAllow                     // no approval needed
	RuleAsk                       // consult the approval cache and handler
)

// AllRuleDecisions lists every RuleDecision.
var AllRuleDecisions = []RuleDecision{RuleDeny, RuleAllow, RuleAsk}

// ApprovalRequest is one Ask-tier call handed to an ApprovalHandler.
type ApprovalRequest struct {
	// Tool is the tool being called.
	Tool string
	// Subject is the canonical command (shell tools), resolved path (file
	// tools) or patch, or nil for a tool with no such subject.
	Subject *string
	// Args is the raw JSON arguments the model supplied.
	Args json.RawMessage
}

// ApprovalHandler renders a decision for one request (an interactive
// prompt, a script, a CI policy). It is only consulted for RuleAsk calls
// that the cache does not already cover.
type ApprovalHandler interface {
	Ask(req ApprovalRequest) ApprovalOutcome
}

// ApprovalCache holds the session's "allow for session" grants. The zero
// value is an empty cache ready to use; it is safe for concurrent use and
// must not be copied after first use.
type ApprovalCache struct {
	mu      sync.RWMutex
	granted map[string]struct{}
}

// NewApprovalCache returns an empty cache.
func NewApprovalCache() *ApprovalCache { return &ApprovalCache{} }

// IsApproved reports whether key was granted for the session. A nil cache
// approves nothing.
func (c *ApprovalCache) IsApproved(key string) bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.granted[key]
	return ok
}

// Approve records key as granted for the rest of the session. On a nil
// cache it does nothing (the grant is lost; the next call asks again).
func (c *ApprovalCache) Approve(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.granted == nil {
		c.granted = make(map[string]struct{})
	}
	c.granted[key] = struct{}{}
}

// Len returns the number of grants.
func (c *ApprovalCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.granted)
}

// ApprovalKey is the cache key of a (tool, subject) pair: the
// length-prefixed encoding of [tool, subject], or of [tool] alone when
// subject is nil. Use it directly only for calls that have a subject;
// KeyForRequest covers every shape. Source: seed 002 ApprovalCache::key.
func ApprovalKey(tool string, subject *string) string {
	if subject == nil {
		return LengthPrefixed(tool)
	}
	return LengthPrefixed(tool, *subject)
}

// KeyForRequest is the cache key ResolveAsk uses. With a subject it equals
// ApprovalKey(tool, subject). Without one it folds the canonical JSON of the
// arguments in, [tool, "args", canonical], so a session grant for one
// argument set never covers a call with different arguments (seed 002 F2).
// Arguments that are not one well-formed JSON value, or that repeat an
// object key (whose meaning depends on the reader), cannot be
// canonicalized: they key as [tool, "raw-args", bytes], which matches only
// the exact same bytes again. An empty Args is the JSON null.
func KeyForRequest(req ApprovalRequest) string {
	if req.Subject != nil {
		return ApprovalKey(req.Tool, req.Subject)
	}
	args := []byte(req.Args)
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("null")
	}
	canon, err := CanonicalJSON(args)
	if err != nil {
		return LengthPrefixed(req.Tool, "raw-args", string(req.Args))
	}
	return LengthPrefixed(req.Tool, "args", canon)
}

// LengthPrefixed joins parts netstring-style: each part as its decimal byte
// length, ":", then its bytes, back to back. Decoding left to right reads a
// length and then exactly that many bytes, so no byte a part contains can
// pass for a boundary: the encoding is injective over part lists, whatever
// the parts hold and however many there are. Source: seed 002 D-3.
func LengthPrefixed(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// errDuplicateKey marks an object that repeats a key.
var errDuplicateKey = errors.New("duplicate object key")

// errReplacementChar marks a string holding U+FFFD.
var errReplacementChar = errors.New("string holds U+FFFD")

// CanonicalJSON renders one JSON value with every object's keys sorted
// (byte order of the decoded key), recursively, and no insignificant white
// space. Strings are re-encoded without HTML escaping; numbers keep their
// literal text (so 1 and 1.0 stay different, which only costs an extra
// prompt). It errors on malformed input, trailing data, a repeated object
// key, invalid UTF-8, or any string holding U+FFFD: the decoder turns
// invalid UTF-8 and lone surrogate escapes into U+FFFD, so such strings
// could collapse different inputs onto one key.
func CanonicalJSON(data []byte) (string, error) {
	if !utf8.Valid(data) {
		return "", errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b bytes.Buffer
	if err := canonicalValue(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("trailing data after JSON value")
	}
	return b.String(), nil
}

// canonicalValue reads the next JSON value from dec and writes its
// canonical form to b.
func canonicalValue(dec *json.Decoder, b *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonicalObject(dec, b)
		case '[':
			return canonicalArray(dec, b)
		default:
			return errors.New("unexpected delimiter")
		}
	case string:
		return writeJSONString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	default:
		return errors.New("unexpected JSON token")
	}
	return nil
}

// canonicalObject reads an object's members after its '{' and writes them
// sorted by key; a repeated key is errDuplicateKey.
func canonicalObject(dec *json.Decoder, b *bytes.Buffer) error {
	type member struct{ key, val string }
	var members []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := kt.(string)
		if !ok {
			return errors.New("object key is not a string")
		}
		var vb bytes.Buffer
		if err := canonicalValue(dec, &vb); err != nil {
			return err
		}
		members = append(members, member{key, vb.String()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	slices.SortFunc(members, func(x, y member) int { return strings.Compare(x.key, y.key) })
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return errDuplicateKey
			}
			b.WriteByte(',')
		}
		if err := writeJSONString(b, m.key); err != nil {
			return err
		}
		b.WriteByte(':')
		b.WriteString(m.val)
	}
	b.WriteByte('}')
	return nil
}

// canonicalArray reads an array's elements after its '[' and writes them
// in order.
func canonicalArray(dec *json.Decoder, b *bytes.Buffer) error {
	b.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := canonicalValue(dec, b); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	b.WriteByte(']')
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) error {
	if strings.ContainsRune(s, utf8.RuneError) {
		return errReplacementChar
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a valid string always encodes
	b.Truncate(b.Len() - 1)
	return nil
}

// ResolveAsk resolves one Ask-tier request (seed 002 resolve_ask): a cache
// hit allows without consulting the handler; with no handler the call is
// denied (fail closed); otherwise the handler's Deny/Allow/AllowForSession
// is false/true/true, and AllowForSession records KeyForRequest(req) in
// cache. An outcome outside the vocabulary denies.
func ResolveAsk(cache *ApprovalCache, handler ApprovalHandler, req ApprovalRequest) bool {
	key := KeyForRequest(req)
	if cache.IsApproved(key) {
		return true
	}
	if handler == nil {
		return false
	}
	switch handler.Ask(req) {
	case ApprovalAllow:
		return true
	case ApprovalAllowForSession:
		cache.Approve(key)
		return true
	}
	return false
}

// DecisionToApproved folds a rule decision into "may this call proceed":
// Deny is false and Allow true without calling ask; Ask returns ask(). A
// decision outside the vocabulary is false.
func DecisionToApproved(d RuleDecision, ask func() bool) bool {
	switch d {
	case RuleAllow:
		return true
	case RuleAsk:
		return ask != nil && ask()
	}
	return false
}
