package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Strict request decoding. encoding/json matches object keys to fields
// case-insensitively and lets a repeated key override the earlier one, so
// {"role":"reviewer","ROLE":null} or {"ceiling":"write=false","ceiling":""}
// would decode as if the restriction had never been written. Every request
// body is therefore checked first (checkKeys): each object key, at every
// level the request type has a struct, map or slice, must appear at most
// once and be spelled exactly as a declared field's JSON name; only then
// is the body decoded (json.Decoder with DisallowUnknownFields). With
// exact, unique keys the two agree on which field every value lands in.

// errBody is what checkKeys and decodeStrict return for a body that is not
// acceptable; the server wraps it in registry.ErrBadRequest (400).
type errBody struct{ msg string }

func (e *errBody) Error() string { return e.msg }

func bodyErrorf(format string, a ...any) error { return &errBody{msg: fmt.Sprintf(format, a...)} }

// decodeStrict decodes data, one JSON object, into v (a pointer to a
// struct): no duplicate keys, no key that is not exactly a field's JSON
// name (case-sensitive), at any depth, and nothing after the object.
func decodeStrict(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("decodeStrict: %T is not a pointer to a struct", v)
	}
	first := bytes.TrimLeft(data, " \t\r\n")
	if len(first) == 0 {
		return bodyErrorf("empty body (want a JSON object)")
	}
	if first[0] != '{' {
		return bodyErrorf("want a JSON object")
	}
	if err := checkKeys(data, t.Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyErrorf("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bodyErrorf("trailing data after the JSON object")
	}
	return nil
}

// checkKeys checks the object keys of the JSON value data against type t
// (where is the dotted path of data, "" at the top). A value of another
// JSON kind than t wants is left to the decoder to refuse; a syntax error
// is reported here.
func checkKeys(data []byte, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if customUnmarshal(t) {
		return validJSON(data, where)
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := jsonFields(t)
		return checkObject(data, where, func(key string) (reflect.Type, error) {
			if ft, ok := fields[key]; ok {
				return ft, nil
			}
			return nil, unknownKey(where, key, fields)
		})
	case reflect.Map:
		return checkObject(data, where, func(string) (reflect.Type, error) { return t.Elem(), nil })
	case reflect.Slice, reflect.Array:
		dec := newDecoder(data)
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(where, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return validJSON(data, where)
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return syntaxError(where, err)
			}
			if err := checkKeys(raw, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return syntaxError(where, err)
		}
		return nil
	}
	return validJSON(data, where)
}

// checkObject walks the object data: each key at most once, each key's
// type from field (which refuses a key with an error), each value checked
// in turn. data that is not an object (null, or a value of another kind)
// is only checked for syntax.
func checkObject(data []byte, where string, field func(key string) (reflect.Type, error)) error {
	dec := newDecoder(data)
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(where, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return validJSON(data, where)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(where, err)
		}
		key, ok := tok.(string)
		if !ok {
			return bodyErrorf("%sobject key %v is not a string", at(where), tok)
		}
		if seen[key] {
			return bodyErrorf("duplicate key %q%s: each key may be given once", join(where, key), within(where))
		}
		seen[key] = true
		ft, err := field(key)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxError(where, err)
		}
		if err := checkKeys(raw, ft, join(where, key)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(where, err)
	}
	return nil
}

func newDecoder(data []byte) *json.Decoder {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec
}

func validJSON(data []byte, where string) error {
	if !json.Valid(data) {
		return bodyErrorf("%sinvalid JSON", at(where))
	}
	return nil
}

func syntaxError(where string, err error) error {
	if isEOF(err) {
		return bodyErrorf("%sunexpected end of JSON", at(where))
	}
	return bodyErrorf("%s%v", at(where), err)
}

// unknownKey names a key that is not a field's JSON name: the field it
// spells in another case, or the known keys.
func unknownKey(where, key string, fields map[string]reflect.Type) error {
	names := make([]string, 0, len(fields))
	for n := range fields {
		if strings.EqualFold(n, key) {
			return bodyErrorf("unknown key %q%s: keys are case-sensitive (did you mean %q?)", join(where, key), within(where), n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return bodyErrorf("unknown key %q%s (known: %s)", join(where, key), within(where), strings.Join(names, ", "))
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func at(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func within(where string) string {
	if where == "" {
		return ""
	}
	return " in " + where
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isEOF: json.Decoder reports the end of its input as io.EOF, or
// io.ErrUnexpectedEOF inside a value.
func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// customUnmarshal: the type decodes itself (time.Time, ...); its keys are
// its own business.
func customUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Kind() != reflect.Struct && (t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler))
}

// jsonFields is the set of JSON object keys encoding/json decodes into a
// struct type, exactly as spelled, with each field's type: exported
// fields by their json tag's name (else the Go name), "-" skipped, fields
// of embedded structs promoted unless a shallower field has the name; a
// name two fields share at the same depth decodes into neither and is not
// in the set.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	type field struct {
		t      reflect.Type
		depth  int
		tagged bool
	}
	all := map[string][]field{}
	var walk func(t reflect.Type, depth int, visited map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, visited map[reflect.Type]bool) {
		if visited[t] {
			return
		}
		visited[t] = true
		defer delete(visited, t)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				et := f.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					walk(et, depth+1, visited)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			tagged := name != ""
			if !tagged {
				name = f.Name
			}
			all[name] = append(all[name], field{t: f.Type, depth: depth, tagged: tagged})
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	// encoding/json: the shallowest field of a name wins; of several at
	// that depth the only tagged one, else none.
	out := make(map[string]reflect.Type, len(all))
	for name, fs := range all {
		top := fs[0].depth
		for _, f := range fs {
			top = min(top, f.depth)
		}
		var at, tagged []field
		for _, f := range fs {
			if f.depth == top {
				at = append(at, f)
				if f.tagged {
					tagged = append(tagged, f)
				}
			}
		}
		switch {
		case len(at) == 1:
			out[name] = at[0].t
		case len(tagged) == 1:
			out[name] = tagged[0].t
		}
	}
	return out
}
