package audit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AVC text: an audit record as the text of a Linux audit AUDIT_USER_AVC
// message (LinuxAudit). The kernel writes it as msg='TEXT' after its own
// pid=, uid=, auid=, ses= of the sender (the daemon), so TEXT is key=value
// pairs separated by one space, in the convention of libaudit's
// audit_encode_nv_string: a string value is double-quoted when every byte
// is printable ASCII other than '"' and '\'' (0x21-0x7e), else written bare
// as upper-case hex of its bytes (a space or a control byte, a quote or
// UTF-8 is hex); an unknown or empty string is a bare "?"; a number is bare
// decimal. TEXT never holds a "'" (it would end the kernel's msg='...'),
// a control byte or a byte over 0x7e.
//
// Keys, in this order (docs/audit.md): record (denial | summary),
// container, opid, ouid, oexe, ocomm (the denied process: its thread group
// id, uid, executable and command; "o" for object, so they never clash
// with the kernel's pid= and uid= of the daemon; a summary has none of
// them), hook, rule, operation, object, decision (denied | audited),
// fingerprint (Record.FingerprintID), errno, then for a summary count,
// since and, for an overflow summary, overflow=1; last res=failed for a
// denial, res=success for an audited would-be denial (audit-only: the
// operation went ahead).

// avcMaxValue bounds a string value's bytes before encoding (a longer one
// is cut): the kernel keeps at most 8560 bytes of a user message, and the
// record must keep its last field.
const avcMaxValue = 1024

// avcStringKeys are the keys whose values are strings (quoted or hex).
var avcStringKeys = map[string]bool{
	"record": true, "container": true, "oexe": true, "ocomm": true, "hook": true, "rule": true,
	"operation": true, "object": true, "decision": true, "fingerprint": true, "since": true,
}

// AVCText is r as the text of an AUDIT_USER_AVC message (see above).
func AVCText(r Record) string {
	var b strings.Builder
	str := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(avcValue(v))
	}
	num := func(k string, v uint64) {
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(v, 10))
	}
	str("record", r.Type)
	str("container", r.Container)
	if r.Type != TypeSummary {
		num("opid", uint64(r.PID))
		num("ouid", uint64(r.UID))
		str("oexe", r.Exe)
		str("ocomm", r.Comm)
	}
	str("hook", r.Hook)
	str("rule", r.Rule)
	str("operation", r.Operation)
	str("object", r.Object)
	str("decision", r.Decision)
	str("fingerprint", r.FingerprintID)
	num("errno", uint64(max(r.Errno, 0)))
	if r.Type == TypeSummary {
		num("count", r.Count)
		str("since", r.Since)
		if r.Overflow {
			num("overflow", 1)
		}
	}
	res := "failed"
	if r.Decision == "audited" {
		res = "success"
	}
	b.WriteString(" res=" + res) // bare, as every audit record writes it
	return b.String()
}

// avcValue encodes one string value: "?" when empty, quoted when every
// byte is in 0x21-0x7e and none is a quote, else upper-case hex. Values
// longer than avcMaxValue bytes are cut to it.
func avcValue(v string) string {
	if v == "" {
		return "?"
	}
	if len(v) > avcMaxValue {
		v = v[:avcMaxValue]
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\'' {
			return strings.ToUpper(hex.EncodeToString([]byte(v)))
		}
	}
	return `"` + v + `"`
}

// ParseAVCText reads TEXT as AVCText writes it back into key → value
// (strings decoded: quoted taken as is, hex decoded, "?" as ""; numbers
// as their digits, res as its word), in order of appearance. It is the reader the encoder
// is tested against, and what a test reading ausearch's raw output uses.
// Errors: a pair without "=", an unterminated quote, a bare value of a
// string key that is not "?" or hex, a key given twice.
func ParseAVCText(text string) (map[string]string, []string, error) {
	out := map[string]string{}
	var order []string
	for rest := text; rest != ""; {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || strings.ContainsAny(rest[:eq], " \"") {
			return nil, nil, fmt.Errorf("avc text: no key=value at %q", rest)
		}
		key := rest[:eq]
		rest = rest[eq+1:]
		var raw string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, nil, fmt.Errorf("avc text: %s: unterminated quote", key)
			}
			raw, rest = rest[:end+2], rest[end+2:]
		} else if sp := strings.IndexByte(rest, ' '); sp >= 0 {
			raw, rest = rest[:sp], rest[sp:]
		} else {
			raw, rest = rest, ""
		}
		if rest != "" {
			if rest[0] != ' ' {
				return nil, nil, fmt.Errorf("avc text: %s: no space after its value", key)
			}
			rest = rest[1:]
		}
		v, err := avcDecode(key, raw)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := out[key]; dup {
			return nil, nil, fmt.Errorf("avc text: key %s given twice", key)
		}
		out[key] = v
		order = append(order, key)
	}
	return out, order, nil
}

// avcDecode is one value of key as avcValue (strings) or strconv (numbers)
// wrote it.
func avcDecode(key, raw string) (string, error) {
	if strings.HasPrefix(raw, `"`) {
		return raw[1 : len(raw)-1], nil
	}
	if key == "res" {
		if raw != "failed" && raw != "success" {
			return "", fmt.Errorf("avc text: res=%q is neither failed nor success", raw)
		}
		return raw, nil
	}
	if !avcStringKeys[key] {
		if _, err := strconv.ParseUint(raw, 10, 64); err != nil {
			return "", fmt.Errorf("avc text: %s=%q is not a number", key, raw)
		}
		return raw, nil
	}
	if raw == "?" {
		return "", nil
	}
	if raw != strings.ToUpper(raw) {
		return "", fmt.Errorf("avc text: %s=%q: hex is upper-case", key, raw)
	}
	b, err := hex.DecodeString(raw)
	if err != nil || len(b) == 0 {
		return "", errors.Join(fmt.Errorf("avc text: %s=%q is neither quoted nor hex", key, raw), err)
	}
	return string(b), nil
}
