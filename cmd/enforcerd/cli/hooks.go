package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
)

// LayerHooks is the attachment of one layer's programs (api.HookStatus
// grouped by Layer): how many are attached, and why the others are not,
// each distinct reason once with the number of programs it stopped.
type LayerHooks struct {
	Layer    string
	Attached int
	Total    int
	// Reasons of the programs not attached, most frequent first (then by
	// text); Optional counts the optional programs whose hook this kernel
	// lacks (coverage.ErrHookNotInKernel), apart: an optional program
	// that failed for another reason is counted under that reason.
	Reasons  []HookReason
	Optional int
}

// HookReason is one reason programs are not attached and how many.
type HookReason struct {
	Error string
	Count int
}

// GroupHooks groups hooks by layer, in the order layers first appear.
func GroupHooks(hooks []api.HookStatus) []LayerHooks {
	var out []LayerHooks
	at := map[string]int{}
	count := map[string]map[string]int{}
	for _, h := range hooks {
		i, ok := at[h.Layer]
		if !ok {
			i = len(out)
			at[h.Layer] = i
			out = append(out, LayerHooks{Layer: h.Layer})
			count[h.Layer] = map[string]int{}
		}
		l := &out[i]
		l.Total++
		switch {
		case h.Attached:
			l.Attached++
		case h.Optional && h.Error == coverage.ErrHookNotInKernel:
			l.Optional++
		default:
			count[h.Layer][OrDash(h.Error)]++
		}
	}
	for i := range out {
		for e, n := range count[out[i].Layer] {
			out[i].Reasons = append(out[i].Reasons, HookReason{Error: e, Count: n})
		}
		sort.Slice(out[i].Reasons, func(a, b int) bool {
			ra, rb := out[i].Reasons[a], out[i].Reasons[b]
			if ra.Count != rb.Count {
				return ra.Count > rb.Count
			}
			return ra.Error < rb.Error
		})
	}
	return out
}

// String is the layer in one line: "bpf-lsm: 0/73 hooks attached:
// REASON" when one reason stopped every program not attached, else each
// reason with its count ("...: 70/73 hooks attached; 2 not: R1; 1 not:
// R2"), and the optional programs absent on this kernel last.
func (l LayerHooks) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d/%d hooks attached", l.Layer, l.Attached, l.Total)
	switch {
	case len(l.Reasons) == 1 && l.Optional == 0:
		fmt.Fprintf(&b, ": %s", l.Reasons[0].Error)
	default:
		for _, r := range l.Reasons {
			fmt.Fprintf(&b, "; %d not: %s", r.Count, r.Error)
		}
	}
	if l.Optional > 0 {
		fmt.Fprintf(&b, " (%d optional not on this kernel)", l.Optional)
	}
	return b.String()
}

// PrintHookTable prints every program's attachment, one row each (the
// per-hook detail behind --verbose).
func PrintHookTable(w io.Writer, hooks []api.HookStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOOK\tLAYER\tPROGRAM\tSTATE")
	for _, h := range hooks {
		state := "attached"
		switch {
		case h.Attached && h.Adopted:
			state = "attached (adopted from the pins)"
		case !h.Attached && h.Optional:
			state = "not attached (optional): " + OrDash(h.Error)
		case !h.Attached:
			state = "NOT ATTACHED: " + OrDash(h.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Hook, h.Layer, h.Program, state)
	}
	return tw.Flush()
}
