// Package failpoint marks the instants at which a crash test kills the
// daemon: between a change to the kernel's maps and the state file's
// save, between the state file's write, fsync and rename. Each is a call
// Hit("area.step"), e.g. Hit("state.rename").
//
// Only a build with the failpoint tag (go test -tags failpoint) can arm
// one (Arm) and be killed by it; in every other build, the product's
// included, Hit is an empty function the compiler removes and Arm does
// not exist (off.go), so no product binary can be made to crash by it.
//
// The names: register.map (the new entry installed), apply.map (each
// entry a narrowing or a clamp rewrites), unregister.map (the entry
// removed), reconcile.map (each entry the start-up reconciliation
// rewrites), and in package state: state.create (the temporary file
// created), state.write (written, not yet synced), state.fsync (synced,
// not yet renamed), state.rename (renamed over the state file, its
// directory not yet synced), intent.write (a registration's intent
// written to its temporary file), intent.rename (renamed into place).
//
// Layering (docs/design.md): layer 0; it imports the standard library only.
package failpoint
