package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestHooksDirFiles: the shipped hooks.d files are ordered by an NN-
// prefix, run `enforcerd hook STAGE` for the stage they declare, and give
// the hook more time than its own default --timeout (so the hook, which
// waits for a restarting daemon, reports before the runtime kills it).
func TestHooksDirFiles(t *testing.T) {
	files, err := filepath.Glob("../../deploy/hooks.d/*.json")
	if err != nil || len(files) != 2 {
		t.Fatalf("hooks.d files: %v, %v; want 2", files, err)
	}
	def, err := newHookCmd(streams{}).Flags().GetDuration("timeout")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !regexp.MustCompile(`^[0-9]{2}-enforcerd-[a-z]+\.json$`).MatchString(filepath.Base(f)) {
			t.Errorf("%s: name is not NN-enforcerd-STAGE.json", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Hook struct {
				Args    []string `json:"args"`
				Timeout int      `json:"timeout"`
			} `json:"hook"`
			Stages []string `json:"stages"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(h.Stages) != 1 || len(h.Hook.Args) != 3 || h.Hook.Args[1] != "hook" || h.Hook.Args[2] != h.Stages[0] {
			t.Errorf("%s: args %v for stages %v", f, h.Hook.Args, h.Stages)
		}
		if time.Duration(h.Hook.Timeout)*time.Second <= def {
			t.Errorf("%s: runtime timeout %ds is not above the hook's default --timeout %v", f, h.Hook.Timeout, def)
		}
	}
}
