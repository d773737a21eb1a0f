//go:build !failpoint

package failpoint

// Enabled: this build has failpoints (the failpoint build tag). False in
// every product build.
const Enabled = false

// Hit does nothing without the failpoint build tag.
func Hit(string) {}
