// Package escapetest holds the VM tests of the shell ceiling, of what holds
// under every ceiling (capabilities, cgroup escape, procfs, host devices,
// terminals, IPC objects, module autoload, tamper protection) and of the
// write-root bypasses; docs/threat-model.md names, for each kind, the test
// that shows it held. Its only non-test code is int80, which makes a 32-bit
// (compat) system call from a 64-bit process, so the tests can show whether
// hooks that only see the native ioctl path miss the compat one.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package escapetest
