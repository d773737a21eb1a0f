package oci

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// duplicateKey reports the first object key given twice in the JSON value
// b, at any depth ("" when none, or when b is not JSON: the decoder says
// why). encoding/json keeps the last of repeated keys, so a state with
// "enforcerd.io/ceiling" twice would register whichever came last; and at
// the top level it matches keys case-insensitively ("ID" fills "id"), so
// there keys are compared case-insensitively too.
func duplicateKey(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dup, _ := walkDuplicates(dec, "", true)
	return dup
}

// walkDuplicates reads one JSON value from dec; dup names the first key
// repeated in an object (path.key), err a token error.
func walkDuplicates(dec *json.Decoder, path string, top bool) (dup string, err error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			norm := k
			if top {
				norm = strings.ToLower(k)
			}
			where := strings.TrimPrefix(path+"."+k, ".")
			if seen[norm] {
				return fmt.Sprintf("%q (at %s)", k, where), nil
			}
			seen[norm] = true
			if dup, err := walkDuplicates(dec, where, false); dup != "" || err != nil {
				return dup, err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if dup, err := walkDuplicates(dec, fmt.Sprintf("%s[%d]", path, i), false); dup != "" || err != nil {
				return dup, err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}
