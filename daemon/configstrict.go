package daemon

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// checkConfigForms refuses the YAML forms that settle a value without
// saying so, in the configuration's first document b (decoded into a
// value of type t, a Config):
//
//   - merge keys ("<<: {allow_partial: true}"): yaml.v3 lets the first of
//     several merged maps win, and a key written beside a merge override
//     it, so which value is in force depends on rules a reader need not
//     know;
//   - anchors and aliases ("&a", "*a"): a value written once and used in
//     several places, or merged (the configuration is small: write each
//     value out);
//   - booleans other than true and false: yaml.v3 decodes YAML 1.1's
//     y, yes, on, n, no, off (any case) and True, TRUE into a bool field.
//
// It also refuses, before yaml.v3 decodes them, a key no field declares
// and a value of the wrong form (checkForm), in the configuration's terms
// rather than yaml.v3's Go types. Errors name the line and the key path.
func checkConfigForms(b []byte, t reflect.Type) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	return checkNode(&doc, t, "")
}

// checkNode checks n, to be decoded into t (nil: a value no field
// declares), at key path where: no anchor or alias, then by kind
// (checkMapping, checkSequence, checkScalar).
func checkNode(n *yaml.Node, t reflect.Type, where string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if err := checkNoAnchor(n, where); err != nil {
		return err
	}
	if err := checkForm(n, t, where); err != nil {
		return err
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkNode(c, t, where); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		return checkMapping(n, t, where)
	case yaml.SequenceNode:
		return checkSequence(n, t, where)
	case yaml.ScalarNode:
		return checkScalar(n, t, where)
	}
	return nil
}

// shownPath is key path where as errors name it.
func shownPath(where string) string {
	if where == "" {
		return "the top level"
	}
	return where
}

// checkNoAnchor refuses an alias node or a node with an anchor.
func checkNoAnchor(n *yaml.Node, where string) error {
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("line %d: %s: alias *%s: anchors and aliases are not accepted in the configuration (write the value out)", n.Line, shownPath(where), n.Value)
	}
	if n.Anchor != "" {
		return fmt.Errorf("line %d: %s: anchor &%s: anchors and aliases are not accepted in the configuration (write the value out)", n.Line, shownPath(where), n.Anchor)
	}
	return nil
}

// checkMapping refuses a merge key in mapping n and checks its keys and
// values, each value as the field (or map element) of t it decodes into.
func checkMapping(n *yaml.Node, t reflect.Type, where string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" || (k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0) {
			return fmt.Errorf("line %d: %s: merge key <<: merge keys are not accepted in the configuration (write each key out once)", k.Line, shownPath(where))
		}
		if err := checkNode(k, nil, where); err != nil {
			return err
		}
		path := strings.TrimPrefix(where+"."+k.Value, ".")
		ft := fieldType(t, k.Value)
		if ft == nil && t != nil && t.Kind() == reflect.Struct {
			return fmt.Errorf("line %d: %s: unknown key (%s takes %s)", k.Line, path, shownPath(where), strings.Join(fieldNames(t), ", "))
		}
		if err := checkNode(v, ft, path); err != nil {
			return err
		}
	}
	return nil
}

// checkSequence checks the elements of sequence n, each as the element of
// slice or array t.
func checkSequence(n *yaml.Node, t reflect.Type, where string) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i, c := range n.Content {
		if err := checkNode(c, elem, fmt.Sprintf("%s[%d]", where, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar refuses a boolean (t a bool) written other than true or
// false.
func checkScalar(n *yaml.Node, t reflect.Type, where string) error {
	if t != nil && t.Kind() == reflect.Bool && n.Value != "true" && n.Value != "false" {
		return fmt.Errorf("line %d: %s: %q is not a boolean: write true or false", n.Line, shownPath(where), n.Value)
	}
	return nil
}

// fieldType is the type a mapping key decodes into: the field of struct t
// whose yaml name is key (inline structs searched), the element of map t,
// nil when none.
func fieldType(t reflect.Type, key string) reflect.Type {
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") {
				if ft := fieldType(f.Type, key); ft != nil {
					return ft
				}
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if name == key {
				return f.Type
			}
		}
	}
	return nil
}

// fieldNames are the yaml keys struct t declares (inline structs
// flattened), sorted.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case strings.Contains(opts, "inline"):
			names = append(names, fieldNames(f.Type)...)
		case name == "-":
		case name == "":
			names = append(names, strings.ToLower(f.Name))
		default:
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

var durationType = reflect.TypeFor[time.Duration]()

// checkForm refuses node n when it cannot be decoded into t (nil: not
// checked), naming the form t wants and what n is: "want a duration such
// as 30s, got 30". Scalars are tried with yaml.v3's own decoding into a
// new t, so what passes here decodes; beyond it a number field takes only
// an integer (yaml.v3 truncates 1.5 into an int) and a single value never
// an empty one (yaml.v3 keeps the default, which the file seems to
// change). An empty list or mapping keeps its default, as its absence.
func checkForm(n *yaml.Node, t reflect.Type, where string) error {
	if t == nil || n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		return nil
	}
	var ok bool
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		ok = n.Kind == yaml.MappingNode || n.ShortTag() == "!!null"
	case reflect.Slice, reflect.Array:
		ok = n.Kind == yaml.SequenceNode || n.ShortTag() == "!!null"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ok = n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && n.Decode(reflect.New(t).Interface()) == nil
	default:
		ok = n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" && n.Decode(reflect.New(t).Interface()) == nil
	}
	if ok {
		return nil
	}
	if t.Kind() == reflect.String && n.ShortTag() == "!!null" {
		return fmt.Errorf("line %d: %s: want a string, got an empty value (write \"\" for an empty string, or leave the key out for the default)", n.Line, shownPath(where))
	}
	return fmt.Errorf("line %d: %s: want %s, got %s", n.Line, shownPath(where), wantedForm(t), nodeForm(n))
}

// wantedForm says in words, with an example, what a value decoded into t
// looks like.
func wantedForm(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s, 1m30s or 100ms"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number such as 64"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number such as 50 or 0.5"
	case t.Kind() == reflect.String:
		return "a string (quote it: \"...\")"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "a list such as [a, b] or one \"- item\" per line"
	}
	return "a mapping (\"key: value\" lines indented under it)"
}

// nodeForm names what n is: a scalar by its text, a list, a mapping.
func nodeForm(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if n.ShortTag() == "!!null" {
		return "an empty value (write one, or leave the key out for the default)"
	}
	return n.Value
}
