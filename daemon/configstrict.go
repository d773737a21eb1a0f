package daemon

import (
	"fmt"
	"reflect"
	"strings"

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
// Errors name the line and the key path.
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
		if err := checkNode(v, fieldType(t, k.Value), path); err != nil {
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
