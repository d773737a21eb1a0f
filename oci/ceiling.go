package oci

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/enforcerd/enforcerd/policy"
)

// Per-field ceiling annotations: one ceiling key each, a value without a
// comma, so a runtime that splits flags at commas cannot cut them
// (podman 4.3 splits `--annotation enforcerd.io/ceiling=network=false,write=false`
// into enforcerd.io/ceiling=network=false and a stray write=false). Each
// value is what the key takes in the ceiling text (policy.ParseCeiling).
// They combine with enforcerd.io/ceiling; a field given both ways must
// agree (ErrCeilingConflict).
const (
	AnnotationNetwork = AnnotationPrefix + "network"
	AnnotationWrite   = AnnotationPrefix + "write"
	AnnotationShell   = AnnotationPrefix + "shell"
	AnnotationTools   = AnnotationPrefix + "tools"
	AnnotationDepth   = AnnotationPrefix + "depth"
)

// CeilingFieldAnnotations lists the per-field annotations in the order of
// policy.CeilingKeys (AnnotationPrefix + the key).
var CeilingFieldAnnotations = []string{AnnotationNetwork, AnnotationWrite, AnnotationShell, AnnotationTools, AnnotationDepth}

// ErrCeilingConflict: a ceiling field is given twice with values that
// differ (enforcerd.io/ceiling and the field's own annotation, or the
// API's "ceiling" and "ceiling_fields"). Nothing says which one was meant:
// the request is refused (the API answers 422).
var ErrCeilingConflict = errors.New("ceiling fields disagree")

// ErrStrayCeilingKey: an annotation named like a bare ceiling key (write,
// network, ...) sits beside an enforcerd ceiling annotation: what a
// runtime that splits at commas leaves of enforcerd.io/ceiling=A,B.
var ErrStrayCeilingKey = errors.New("stray ceiling key beside the ceiling annotation")

// MergeCeiling combines ceiling text (enforcerd.io/ceiling, the API's
// "ceiling") with per-field values (key of policy.CeilingKeys → value as
// written) into one ceiling text: text, then the fields it does not
// give, in policy.CeilingKeys order. A field the text also gives must
// have the same value once parsed ("deny" and "false" agree). Errors: a
// malformed text or value (policy.ErrBadCeiling, naming the field), an
// unknown field key, a disagreement (ErrCeilingConflict naming both).
// This is the one rule of the hook, the NRI plugin and the API.
func MergeCeiling(text string, fields map[string]string) (string, error) {
	if _, err := policy.ParseCeiling(text, policy.Ceiling{}); err != nil {
		return "", err
	}
	given := map[string]string{}
	for _, item := range strings.Split(text, ",") {
		if k, v, ok := strings.Cut(item, "="); ok {
			given[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyIndex(keys[i]) < keyIndex(keys[j]) })
	out := strings.TrimSpace(text)
	for _, k := range keys {
		v := strings.TrimSpace(fields[k])
		if keyIndex(k) == len(policy.CeilingKeys) {
			return "", fmt.Errorf("%w: %s: unknown field (want %s)", policy.ErrBadCeiling, k, strings.Join(policy.CeilingKeys, "|"))
		}
		if strings.Contains(v, ",") {
			return "", fmt.Errorf("%w: %s: %q: one value, no comma", policy.ErrBadCeiling, k, v)
		}
		f, err := policy.ParseCeiling(k+"="+v, policy.Ceiling{})
		if err != nil {
			return "", err
		}
		if tv, ok := given[k]; ok {
			if t, _ := policy.ParseCeiling(k+"="+tv, policy.Ceiling{}); t != f {
				return "", fmt.Errorf("%w: %s is %q in the ceiling text and %q on its own", ErrCeilingConflict, k, tv, v)
			}
			continue
		}
		if out != "" {
			out += ","
		}
		out += k + "=" + v
	}
	return out, nil
}

// keyIndex is k's position in policy.CeilingKeys (len when it is none).
func keyIndex(k string) int {
	for i, c := range policy.CeilingKeys {
		if c == k {
			return i
		}
	}
	return len(policy.CeilingKeys)
}

// ceilingFields picks the per-field annotations of ann (key without the
// prefix → value); nil when there are none.
func ceilingFields(ann map[string]string) map[string]string {
	var out map[string]string
	for i, a := range CeilingFieldAnnotations {
		if v, ok := ann[a]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[policy.CeilingKeys[i]] = v
		}
	}
	return out
}

// GivesCeiling reports whether ann gives a ceiling: enforcerd.io/ceiling
// or a per-field annotation.
func GivesCeiling(ann map[string]string) bool {
	if _, ok := ann[AnnotationCeiling]; ok {
		return true
	}
	return ceilingFields(ann) != nil
}

// strayCeilingKeys returns an error when ann gives a ceiling and also
// holds an annotation named exactly like a ceiling key (in any letter
// case, surrounding blanks ignored): podman 4.3 turns
// `--annotation enforcerd.io/ceiling=network=false,write=false` into
// enforcerd.io/ceiling=network=false and write=false, and taking the first
// alone would register write=true.
func strayCeilingKeys(ann map[string]string) error {
	if !GivesCeiling(ann) {
		return nil
	}
	var stray []string
	for k := range ann {
		if keyIndex(strings.ToLower(strings.TrimSpace(k))) < len(policy.CeilingKeys) {
			stray = append(stray, k+"="+ann[k])
		}
	}
	if len(stray) == 0 {
		return nil
	}
	sort.Strings(stray)
	return fmt.Errorf("%w: annotation %s beside the ceiling: a runtime split a comma-separated --annotation (podman does); give each field its own annotation, e.g. --annotation %snetwork=false --annotation %swrite=false",
		ErrStrayCeilingKey, strings.Join(stray, ", "), AnnotationPrefix, AnnotationPrefix)
}
