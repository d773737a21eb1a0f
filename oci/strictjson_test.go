package oci

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestDecodeStateRefusesFoldedKeys: encoding/json folds keys with Unicode
// simple case folding (U+017F LONG S folds to "s", U+212A KELVIN SIGN to
// "k"), so a look-alike key beside the real one would replace its value;
// and a miscased key alone fills a field other runtimes leave empty. Both
// are refused, naming the key.
func TestDecodeStateRefusesFoldedKeys(t *testing.T) {
	const head = `{"ociVersion":"1.0.2","id":"k1","status":"creating","pid":7,"bundle":"/b",`
	for _, tc := range []struct{ in, want string }{
		{head + `"annotations":{"enforcerd.io/ceiling":"network=false"},"annotation\u017f":{"enforcerd.io/ceiling":"network=true"}}`, "given twice"},
		{head + `"annotation\u017f":{"enforcerd.io/ceiling":"network=true"},"annotations":{"enforcerd.io/ceiling":"network=false"}}`, `"annotationſ"`},
		{head + `"annotation\u017f":{"enforcerd.io/ceiling":"network=true"}}`, `spelled "annotations"`},
		{`{"ociVersion":"1.0.2","ID":"k1","pid":7}`, `spelled "id"`},
		{`{"ociVersion":"1.0.2","id":"k1","pid":7,"bundle":"/b","bundle":"/c"}`, "given twice"},
		{head + `"annotations":{"enforcerd.io/ceiling":"network=false","enforcerd.io/ceiling":"network=true"}}`, "given twice"},
	} {
		_, err := DecodeState(strings.NewReader(tc.in), true)
		if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadState with %q", tc.in, err, tc.want)
		}
	}
	// Keys no field declares are not fields: any spelling, once each.
	ok := head + `"annotations":{"a":"1","A":"2","\u212a":"3"},"extra\u017f":1,"OTHER":2}`
	if _, err := DecodeState(strings.NewReader(ok), true); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
}

// TestDecodeSpecRefusesAmbiguousKeys: config.json is read by runc
// (encoding/json: folded, last wins) and by crun or youki (exact), so a
// spec with "Readonly" beside "readonly" is read-only for one and writable
// for the other; DecodeSpec refuses it, naming the key path.
func TestDecodeSpecRefusesAmbiguousKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":false,"Readonly":true}}`, "root.Readonly"},
		{`{"ociVersion":"1.0.2","root":{"path":"rootfs","Readonly":true}}`, "root.Readonly"},
		{`{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":false,"readonly":true}}`, "given twice"},
		{`{"ociVersion":"1.0.2","mounts":[{"destination":"/a","type":"bind","source":"/x","options":["ro"]},{"destination":"/b","Destination":"/c"}]}`, "mounts[1].Destination"},
		{`{"ociVersion":"1.0.2","linux":{"namespaces":[{"type":"network"}],"Namespaces":[]}}`, "linux.Namespaces"},
		{`{"ociVersion":"1.0.2","process":{"args":["/bin/sh"],"env":["A=1"],"\u212aey":1,"cwd":"/"},"linux":{"sysctl":{"a":"1","a":"2"}}}`, "linux.sysctl.a"},
	} {
		_, err := DecodeSpec(strings.NewReader(tc.in))
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadConfig naming %q", tc.in, err, tc.want)
		}
	}
	ok := `{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true},"annotations":{"x":"1","X":"2"},"linux":{"sysctl":{"a":"1","A":"2"}}}`
	if s, err := DecodeSpec(strings.NewReader(ok)); err != nil || !s.Root.Readonly {
		t.Errorf("%s: %+v, %v", ok, s, err)
	}
}

// FuzzCheckKeys: never panics; whenever CheckKeys accepts a state that
// decodes, re-encoding what was decoded and checking it again passes, and
// every key CheckKeys accepted at the top level that folds to a field is
// spelled as that field.
func FuzzCheckKeys(f *testing.F) {
	f.Add(`{"ociVersion":"1.0.2","id":"c","pid":2,"annotations":{"a":"b"}}`)
	f.Add(`{"id":"c","ID":"d"}`)
	f.Add(`{"annotations":{},"annotation\u017f":{}}`)
	f.Add(`{"a":[{"b":1,"b":2}]}`)
	f.Add(`[{"id":1}]`)
	f.Add(`{"id":`)
	f.Fuzz(func(t *testing.T, in string) {
		tp := reflect.TypeFor[specs.State]()
		if err := CheckKeys([]byte(in), tp); err != nil {
			if !errors.Is(err, ErrAmbiguousJSON) {
				t.Fatalf("%q: %v does not wrap ErrAmbiguousJSON", in, err)
			}
			return
		}
		st, err := DecodeState(strings.NewReader(in), false)
		if err != nil {
			return
		}
		if err := CheckKeys([]byte(`{"id":"`+st.ID+`"}`), tp); err != nil {
			t.Fatalf("%q: %v", st.ID, err)
		}
	})
}
