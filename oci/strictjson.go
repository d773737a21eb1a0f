package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrAmbiguousJSON is wrapped by CheckKeys: the JSON has a key that
// encoding/json and another reader of the same bytes could settle
// differently.
var ErrAmbiguousJSON = errors.New("ambiguous JSON")

// CheckKeys reports the first object key in the JSON value b that would
// not land in one field unambiguously when b is decoded into a value of
// type t (as DecodeState does for a specs.State and the hook for a bundle's
// config.json, a specs.Spec). encoding/json matches an object key to a
// struct field with Unicode simple case folding (bytes.EqualFold: "ID",
// "Id" and "annotation\u017f" with U+017F LONG S all fill the field
// tagged "id" or "annotations") and keeps the last of repeated keys, while
// other runtimes (crun, youki) match exactly; so, at every level b has a
// struct, map or slice of t:
//
//   - in an object decoded into a struct, no two keys may fold to each
//     other ("given twice"), and a key that folds to a field's JSON name
//     must be spelled exactly as it ("spelled ... not ...");
//   - in any other object (a map, or a value t does not declare), no key
//     may be given twice exactly.
//
// Keys no field declares are otherwise allowed (later runtime-spec
// versions add some). A syntax error is left to the decoder (nil here).
// Errors wrap ErrAmbiguousJSON and name the key's dotted path.
func CheckKeys(b []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := walkKeys(dec, t, "")
	if errors.Is(err, ErrAmbiguousJSON) {
		return err
	}
	return nil
}

// walkKeys reads one JSON value from dec, checking its keys against t (nil:
// a value no Go type describes); where is its dotted path.
func walkKeys(dec *json.Decoder, t reflect.Type, where string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && customJSON(t) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		if err := walkObject(dec, t, where); err != nil {
			return err
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkKeys(dec, elem, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// walkObject checks the keys of one object (its '{' read) against t.
func walkObject(dec *json.Decoder, t reflect.Type, where string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = jsonFields(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	var seen []string
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := kt.(string)
		path := strings.TrimPrefix(where+"."+k, ".")
		for _, s := range seen {
			if s == k || (fields != nil && strings.EqualFold(s, k)) {
				return fmt.Errorf("%w: key %q (at %s) given twice (as %q and %q; which one the writer meant is unknown)", ErrAmbiguousJSON, k, path, s, k)
			}
		}
		seen = append(seen, k)
		next := elem
		if fields != nil {
			next = nil
			if ft, ok := fields[k]; ok {
				next = ft
			} else if name := foldedField(fields, k); name != "" {
				return fmt.Errorf("%w: key %q (at %s) is spelled %q in the runtime-spec; keys are matched exactly", ErrAmbiguousJSON, k, path, name)
			}
		}
		if err := walkKeys(dec, next, path); err != nil {
			return err
		}
	}
	return nil
}

// foldedField is the JSON name in fields that k folds to ("" when none).
func foldedField(fields map[string]reflect.Type, k string) string {
	for name := range fields {
		if strings.EqualFold(name, k) {
			return name
		}
	}
	return ""
}

// jsonFields maps the JSON names of struct t's fields (embedded untagged
// structs flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// customJSON: t (or *t) decodes itself; its keys are not struct fields.
func customJSON(t reflect.Type) bool {
	u := reflect.TypeFor[json.Unmarshaler]()
	return t.Implements(u) || reflect.PointerTo(t).Implements(u)
}
