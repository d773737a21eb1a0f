package coverage

import (
	"errors"
	"strings"
	"testing"
)

// TestPartialRefusalWording: a refusal for partial coverage says "only in
// part", never also "cannot be enforced", and still matches both sentinel
// errors (callers fail closed on ErrCannotEnforce).
func TestPartialRefusalWording(t *testing.T) {
	c := Coverage{Partial: []Gap{{Code: GapNetworkUnix, Field: "network", Detail: "d"}}}
	err := c.Err(false, false)
	if err == nil {
		t.Fatal("partial coverage without opt-in was accepted")
	}
	if !errors.Is(err, ErrCannotEnforce) || !errors.Is(err, ErrPartial) {
		t.Errorf("errors.Is: cannot=%v partial=%v, want both", errors.Is(err, ErrCannotEnforce), errors.Is(err, ErrPartial))
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "ceiling would be enforced only in part on this host: not enforced: ") || strings.Contains(msg, "cannot be enforced") {
		t.Errorf("message %q", msg)
	}
	if err := c.Err(false, true); err != nil {
		t.Errorf("opted in: %v", err)
	}
}
