package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The request keys, written out here independently of jsonFields.
var (
	registerKeys   = []string{"activate", "allow_connect", "allow_devices", "audit_only", "ceiling", "ceiling_fields", "cgroup", "container_spec", "deny_console_egress", "entrypoint", "exec_allow", "id", "init_pid", "own_terminals", "parent", "pid", "proxy_allow", "role", "setup_program", "tool_groups", "write_roots"}
	entrypointKeys = []string{"cwd", "env_path", "path", "root"}
	narrowKeys     = []string{"ceiling"}
)

func keysOf(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestJSONFieldsOfRequests: the keys decodeStrict accepts are exactly the
// request types' JSON names (registerBody's own "role" shadowing
// RegisterRequest's).
func TestJSONFieldsOfRequests(t *testing.T) {
	for _, x := range []struct {
		v    any
		want []string
	}{
		{registerBody{}, registerKeys},
		{Entrypoint{}, entrypointKeys},
		{NarrowRequest{}, narrowKeys},
	} {
		f := jsonFields(reflect.TypeOf(x.v))
		if got := keysOf(f); !slices.Equal(got, x.want) {
			t.Errorf("%T: keys %v, want %v", x.v, got, x.want)
		}
	}
	if rt := jsonFields(reflect.TypeOf(registerBody{}))["role"]; rt != reflect.TypeOf((*string)(nil)) {
		t.Errorf("registerBody role: %v, want *string (the shadowing field)", rt)
	}
}

// TestJSONFieldsFollowsEncodingJSON: embedding, shadowing, ambiguity,
// "-", unexported and untagged fields, as encoding/json decodes them.
func TestJSONFieldsFollowsEncodingJSON(t *testing.T) {
	type inner struct {
		A int `json:"a"`
		B int `json:"b"`
		C int
		F int `json:"F"`
	}
	type other struct {
		C int
		D int `json:"d"`
		E int
		F int
	}
	type tagged struct {
		D int `json:"d"`
	}
	type outer struct {
		inner
		other
		A       string `json:"a"`
		Skip    int    `json:"-"`
		private int
		Named   tagged `json:"named"`
		E       int    `json:"e,omitempty"`
	}
	_ = outer{}.private
	got := keysOf(jsonFields(reflect.TypeOf(outer{})))
	// C: two untagged at depth 1: neither. F: the tagged one of two at
	// depth 1. a: the outer shadows inner's. E: other's (a different key
	// from the outer "e").
	want := []string{"E", "F", "a", "b", "d", "e", "named"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	// encoding/json agrees: every key in the set decodes, the others are
	// unknown fields.
	value := map[string]string{"a": `"x"`, "named": `{"d":1}`}
	for _, k := range want {
		v, ok := value[k]
		if !ok {
			v = "1"
		}
		if err := looseDecode([]byte(`{"`+k+`":`+v+`}`), &outer{}); err != nil {
			t.Errorf("key %q: encoding/json: %v", k, err)
		}
	}
	for _, k := range []string{"C", "Skip", "private", "inner", "other"} {
		if err := looseDecode([]byte(`{"`+k+`":1}`), &outer{}); err == nil {
			t.Errorf("key %q: encoding/json accepts it", k)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	ok := []string{
		`{}`,
		` {"id":"a","cgroup":"/c","role":"reviewer","ceiling":"network=false"} `,
		`{"id":"a","role":null,"entrypoint":null}`,
		`{"id":"a","entrypoint":{"path":"p","root":"/r","env_path":"/bin","cwd":"/"}}`,
		`{"id":"a\u0062"}`,
	}
	for _, b := range ok {
		var v registerBody
		if err := decodeStrict([]byte(b), &v); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	bad := map[string]string{
		`{"id":"a","id":"a"}`:                       `duplicate key "id"`,
		`{"role":"reviewer","role":null}`:           `duplicate key "role"`,
		`{"role":"reviewer","ROLE":null}`:           `unknown key "ROLE": keys are case-sensitive (did you mean "role"?)`,
		`{"ceiling":"write=false","CEILING":""}`:    `unknown key "CEILING"`,
		`{"ıd":"a"}`:                                `unknown key "ıd"`,
		`{"\u0069d":"a","id":"b"}`:                  `duplicate key "id"`,
		`{"entrypoint":{"path":"a","path":"b"}}`:    `duplicate key "entrypoint.path" in entrypoint`,
		`{"entrypoint":{"ROOT":"/"}}`:               `unknown key "entrypoint.ROOT" in entrypoint`,
		`{"x":1}`:                                   `unknown key "x" (known: activate, allow_connect, allow_devices, audit_only, ceiling, ceiling_fields, cgroup, container_spec, deny_console_egress, entrypoint, exec_allow, id, init_pid, own_terminals, parent, pid, proxy_allow, role, setup_program, tool_groups, write_roots)`,
		`{"id":"a"} {}`:                             `trailing data`,
		`{"id":"a"}x`:                               `trailing data`,
		`{"id":`:                                    `unexpected end of JSON`,
		`{"id":"a",}`:                               `invalid character`,
		`null`:                                      `want a JSON object`,
		`"x"`:                                       `want a JSON object`,
		`{"pid":"1"}`:                               `cannot unmarshal`,
		`{"id":{"a":1}}`:                            `cannot unmarshal`,
		`{"entrypoint":[{"path":"a"}]}`:             `cannot unmarshal`,
		`{"id":"a","pid":1e400}`:                    `cannot unmarshal`,
		`{"role":"reviewer","r\u006fle":"general"}`: `duplicate key "role"`,
		`{"id":"a","entrypoint":{"path":"a"},"Id":"b"}`: `did you mean "id"`,
	}
	for b, want := range bad {
		var v registerBody
		err := decodeStrict([]byte(b), &v)
		var eb *errBody
		if err == nil || !errors.As(err, &eb) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want an errBody with %q", b, err, want)
		}
	}
	var n NarrowRequest
	if err := decodeStrict([]byte(`{"ceiling":"network=false,write=false","CEILING":""}`), &n); err == nil || !strings.Contains(err.Error(), `"CEILING"`) {
		t.Errorf("narrow: %v", err)
	}
}

// looseDecode is encoding/json as the API used it before: unknown fields
// refused, case-insensitive keys, the last duplicate wins.
func looseDecode(data []byte, v any) error {
	if first := bytes.TrimLeft(data, " \t\r\n"); len(first) == 0 || first[0] != '{' {
		return errors.New("not an object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// keysExact reports whether every object key of a register body is, at the
// top and in "entrypoint", exactly one of the declared keys and given once
// (written independently of checkKeys: one walk over all tokens).
func keysExact(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj     bool
		keys    map[string]bool
		allowed []string // nil: not checked
		expect  bool     // next token in an object is a key
		key     string   // the last key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return len(stack) == 0
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].expect = true
				}
				continue
			}
			k := tok.(string)
			if top.allowed != nil && (top.keys[k] || !slices.Contains(top.allowed, k)) {
				return false
			}
			top.keys[k] = true
			top.key, top.expect = k, false
			continue
		}
		// a value
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				var allowed []string
				switch {
				case top == nil:
					allowed = registerKeys
				case len(stack) == 1 && top.obj && top.key == "entrypoint":
					allowed = entrypointKeys
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, allowed: allowed, expect: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].expect = true
		}
	}
}

// FuzzDecodeStrict: decodeStrict accepts a body exactly when encoding/json
// accepts it and its keys are exact and unique (keysExact), and then
// decodes the same value; it never panics.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"id":"d0","cgroup":"/c/d0","role":"reviewer","role":null}`,
		`{"id":"d1","cgroup":"/c/d1","role":"reviewer","ROLE":null}`,
		`{"id":"d2","cgroup":"/c/d2","role":"reviewer","Role":"general"}`,
		`{"id":"e0","cgroup":"/c/e0","ceiling":"network=false,write=false","ceiling":null}`,
		`{"id":"e1","cgroup":"/c/e1","ceiling":"network=false,write=false","CEILING":""}`,
		`{"id":"a","pid":3,"audit_only":true,"tool_groups":"x","activate":"exec","init_pid":2,"parent":"p"}`,
		`{"id":"a","entrypoint":{"path":"p","root":"/r","env_path":"/bin","cwd":"/","PATH":"sh"}}`,
		`{"id":"a","entrypoint":{"path":"p","path":"sh"}}`,
		`{"id":"a","ceiling":"shell=none","exec_allow":["/bin/agent","/bin/agent"],"exec_allow":[]}`,
		`{"id":"a","ceiling":"shell=none","exec_allow":["/bin/agent"],"EXEC_ALLOW":null}`,
		`{"id":"a","ceiling":"shell=none","exec_allow":"/bin/agent"}`,
		`{"role":"r\u006fle","r\u006fle":1}`,
		`{"id":[1,{"a":1,"a":2}]}`,
		`{} {}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, loose registerBody
		serr := decodeStrict(data, &strict)
		lerr := looseDecode(data, &loose)
		exact := keysExact(data)
		if serr == nil {
			if lerr != nil || !exact {
				t.Fatalf("%q: accepted; encoding/json: %v, keys exact: %v", data, lerr, exact)
			}
			if !reflect.DeepEqual(strict, loose) {
				t.Fatalf("%q: decoded %+v, encoding/json %+v", data, strict, loose)
			}
			return
		}
		var eb *errBody
		if !errors.As(serr, &eb) {
			t.Fatalf("%q: error %v is not an errBody (400)", data, serr)
		}
		if lerr == nil && exact {
			t.Fatalf("%q: refused (%v), but encoding/json decodes it and its keys are exact", data, serr)
		}
		var n NarrowRequest
		_ = decodeStrict(data, &n)
	})
}
