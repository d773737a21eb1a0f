package enforcer

// Device nodes are host objects: under every ceiling, opening (any mode),
// reading, writing, ioctl and mmap of a character or block device is
// decided by an allow list (docs/threat-model.md, "Devices and
// terminals"): the null-like devices, the sandbox's own terminals
// (Entry.Terminals, and ptys it creates from /dev/ptmx) and the devices
// the operator lists for the container (Entry.AllowDevices).

// MaxAllowDevices is the most devices one registration may list in
// Entry.AllowDevices.
const MaxAllowDevices = 16

// MaxTerminals is the most own terminals one registration may declare in
// Entry.Terminals.
const MaxTerminals = 8

// Device names one device node by type and number, the way the kernel
// does (inode->i_rdev).
type Device struct {
	// Block: a block device (S_IFBLK); false: a character device (S_IFCHR).
	Block bool
	// Dev is the device number in the kernel's encoding, major<<20|minor.
	Dev uint32
}

// Terminal identifies one terminal the sandbox owns: declared at
// registration (the entrypoint's stdio and controlling terminal).
type Terminal struct {
	// Dev is the tty's device number in the kernel's encoding
	// (major<<20|minor): for a pty slave, 136–143 major and its index.
	Dev uint32
	// PtsDev is, for a pty slave, the device of the devpts instance
	// that holds it (its superblock's s_dev, kernel encoding): the same
	// pty number names another terminal in another devpts instance.
	// 0 for every other terminal.
	PtsDev uint32
}
