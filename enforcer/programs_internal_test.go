package enforcer

import (
	"fmt"
	"testing"

	"github.com/enforcerd/enforcerd/bpf"
)

// TestOneProgramPerHook: on any one kernel, every hook enforcerd attaches
// to runs one program of enforcerd's, never two. The trampoline calls each
// attached program in turn, and each costs every caller on the host its
// own enter and exit whatever its body does (docs/performance.md: a second
// program on file_permission added 5 % to every pread of the host), so a
// rule for a hook that already has a program goes into that program. The
// variants of one hook for different kernel signatures (object.params)
// count once per signature.
func TestOneProgramPerHook(t *testing.T) {
	at := map[string][]string{}
	for _, obj := range objects {
		secs, err := bpf.ProgramSections(obj.stem)
		if err != nil {
			t.Fatal(err)
		}
		for name, sec := range secs {
			key := sec
			if n, ok := obj.params[name]; ok {
				key = fmt.Sprintf("%s (%d parameters)", sec, n)
			}
			at[key] = append(at[key], obj.stem+"/"+name)
		}
	}
	if len(at) < 80 {
		t.Fatalf("only %d hooks found: the objects were not read", len(at))
	}
	for hook, progs := range at {
		if len(progs) > 1 {
			t.Errorf("%s runs %d programs: %v; merge them into one", hook, len(progs), progs)
		}
	}
}
