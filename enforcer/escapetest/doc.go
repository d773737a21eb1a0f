// Package escapetest holds the VM tests of the shell ceiling and of the
// escape and tamper protection (docs/threat-model.md X1-X3,
// E1-E4, E6). Its only non-test code is int80, which makes a 32-bit (compat)
// system call from a 64-bit process, so the tests can show whether hooks that
// only see the native ioctl path miss the compat one.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package escapetest
