package daemon_test

// docs/comparison.md's host recipe (an agent in a systemd scope under
// enforcerd run), run verbatim from the release's copy of the page under
// systemd as PID 1 (the Debian guest): the page cannot drift from what
// works.

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"
)

// recipeMarker precedes the recipe's shell block in docs/comparison.md.
const recipeMarker = "<!-- recipe:scope "

// docRecipe returns the first ```sh block after recipeMarker in doc.
// Errors: no marker, no block after it, or an unterminated block.
func docRecipe(doc string) (string, bool) {
	_, after, ok := strings.Cut(doc, recipeMarker)
	if !ok {
		return "", false
	}
	_, after, ok = strings.Cut(after, "\n```sh\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	return block, ok && strings.TrimSpace(block) != ""
}

// TestNativeDocRecipeExtracted: the page has the block the VM test runs, and it
// is the scope recipe (natively: a renamed marker or a moved fence fails
// here before the VM).
func TestNativeDocRecipeExtracted(t *testing.T) {
	b, err := os.ReadFile("../docs/comparison.md")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := docRecipe(string(b))
	if !ok {
		t.Fatalf("docs/comparison.md has no shell block after %q", recipeMarker)
	}
	for _, want := range []string{"systemd-run --scope", "enforcerd run --network deny --"} {
		if !strings.Contains(r, want) {
			t.Errorf("the recipe does not say %q:\n%s", want, r)
		}
	}
	if _, ok := docRecipe("no marker"); ok {
		t.Error("docRecipe found a recipe in a page without the marker")
	}
}

// enforcerdRunPrefix matches the recipe's `enforcerd run ... -- \` line,
// which the control run leaves out.
var enforcerdRunPrefix = regexp.MustCompile(`enforcerd run [^\n]*-- \\\n\s*`)

// TestVMSystemdUnitScopeRecipe runs the recipe of the release's
// docs/comparison.md as written: the agent's connection is refused with
// EPERM at socket_create, and enforcerd run names the denial; the same
// command without enforcerd run fails otherwise (no route), so the
// denial is the ceiling's.
func TestVMSystemdUnitScopeRecipe(t *testing.T) {
	vmtest.RequireDebianGuest(t)
	vmtest.RequireLSM(t, nil)
	dist := os.Getenv("ENFORCERD_VMTEST_DIST")
	if dist == "" {
		t.Fatal("ENFORCERD_VMTEST_DIST is not set: scripts/vmtest --rootfs debian packs the release tarball for packages with testdata/needs-dist")
	}
	doc := sh(t, "tar -xzf "+dist+" -O --wildcards '*/docs/comparison.md'")
	recipe, ok := docRecipe(doc + "\n")
	if !ok {
		t.Fatalf("the release's docs/comparison.md has no recipe block after %q", recipeMarker)
	}
	control := strings.ReplaceAll(enforcerdRunPrefix.ReplaceAllString(recipe, ""), "--unit=agent-1", "--unit=agent-control")
	if control == recipe || strings.Contains(control, "enforcerd run") {
		t.Fatalf("could not take enforcerd run out of the recipe:\n%s", recipe)
	}
	out, err := exec.Command("/bin/bash", "-c", control).CombinedOutput()
	if err == nil || strings.Contains(string(out), "PermissionError") || !strings.Contains(string(out), "OSError") {
		t.Fatalf("control (the recipe without enforcerd run): %v\n%s\nwant an OSError other than EPERM (no route)", err, out)
	}
	t.Logf("the recipe, from the release's docs/comparison.md:\n%s", recipe)
	out, err = exec.Command("/bin/bash", "-c", recipe).CombinedOutput()
	s := string(out)
	if err == nil || !strings.Contains(s, "PermissionError: [Errno 1] Operation not permitted") {
		t.Fatalf("the recipe: %v\n%s\nwant the connection refused with EPERM", err, s)
	}
	if !strings.Contains(s, "enforcerd: denied") || !strings.Contains(s, "socket_create") {
		t.Errorf("enforcerd run did not print the socket_create denial:\n%s", s)
	}
}
