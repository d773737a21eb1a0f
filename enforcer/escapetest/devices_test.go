package escapetest

// Device nodes and terminals are host objects under every ceiling
// (bpf/devices.h; threat model "Devices and terminals", D1-D4).

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// hostPty is a pty the test (outside every sandbox) created.
type hostPty struct {
	master, slave *os.File
	path          string
}

// newHostPty opens a pty from the test process; closed with the test.
func newHostPty(t *testing.T) *hostPty {
	t.Helper()
	m, s, err := probe.OpenPty(false)
	if err != nil {
		t.Fatalf("host pty: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	p := &hostPty{master: os.NewFile(uintptr(m), "ptmx"), slave: os.NewFile(uintptr(s), "pts"), path: "/dev/pts/" + strconv.Itoa(n)}
	t.Cleanup(func() { p.master.Close(); p.slave.Close() })
	return p
}

// terminal is p's identity as an own terminal (entry.Terminal).
func (p *hostPty) terminal(t *testing.T) entry.Terminal {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(p.slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return entry.Terminal{Dev: kdev(st.Rdev), PtsDev: kdev(st.Dev)}
}

func kdev(d uint64) uint32 { return unix.Major(d)<<20 | unix.Minor(d) }

// masterSees reports whether the master reads mark within 1 s.
func (p *hostPty) masterSees(mark string) bool {
	fd := int(p.master.Fd())
	deadline := time.Now().Add(time.Second)
	var got strings.Builder
	for time.Now().Before(deadline) {
		if !probe.WaitReadable(fd, time.Until(deadline)) {
			break
		}
		b := make([]byte, 512)
		n, err := unix.Read(fd, b)
		if err != nil || n <= 0 {
			break
		}
		got.Write(b[:n])
		if strings.Contains(got.String(), mark) {
			return true
		}
	}
	return false
}

// allocVT2 allocates virtual console 2 (an open does), so /dev/vcs2
// shows its screen.
func allocVT2(t *testing.T) {
	t.Helper()
	fd, err := unix.Open("/dev/tty2", unix.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/tty2 (the VM's virtual consoles): %v", err)
	}
	unix.Close(fd)
	mustExist(t, "/dev/vcs2", "virtual console 2, allocated")
}

// TestHostDevices (D1): devices off the allow list cannot be opened, in
// any mode, under the all-allow ceiling.
func TestHostDevices(t *testing.T) {
	kt.Enforcer(t)
	want := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleHostDevice)
	cases := []kerneltest.Case{
		{Name: "D1 /dev/watchdog: an open arms a host reboot", Prep: func(t *testing.T) { mustExist(t, "/dev/watchdog", "softdog") },
			Attempt: kerneltest.Op("watchdog-arm"), Want: want},
		{Name: "D1 /dev/cpu_dma_latency: a host-wide 0 us latency limit", Attempt: kerneltest.Op("dma-latency"), Want: want},
		{Name: "D1 /dev/uinput: a new host keyboard", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mustExist(t, "/dev/uinput", "the uinput module")
			return sb.Probe(t, "uinput-create", fmt.Sprintf("escapetest-dev-%d", kt.Seq())), nil
		}, Want: want},
		{Name: "D1 read-only open of a block device (every host file)", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "read-dev", mustEnv(t, "ENFORCERD_VMTEST_EXT_DEV")), nil
		}, Want: want},
		{Name: "D1 read /dev/vcs1 (the host console's screen)", Prep: func(t *testing.T) { mustExist(t, "/dev/vcs1", "a virtual console") },
			Attempt: kerneltest.Op("read-dev", "/dev/vcs1"), Want: want},
		// A descriptor opened outside and passed in: decided at the write
		// (the kmsg rule of file.bpf.c, or this one, whichever runs first).
		{Name: "D1 write /dev/kmsg through a descriptor opened outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return sb.ProbeFiles(t, []*os.File{f}, "tty-fd-write", "escapetest: forged kernel log line"), nil
		}, Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleKmsg, denial.RuleHostDevice)},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
}

// TestForeignTerminals (D2): a terminal neither declared nor created
// inside answers queries only: no open for write, no write or read (also
// through a descriptor opened outside), no resize, termios or flow change;
// /dev/tty0 and /dev/console are decided on the tty they reach.
func TestForeignTerminals(t *testing.T) {
	kt.Enforcer(t)
	var p *hostPty
	prep := func(t *testing.T) { p = newHostPty(t) }
	mark := func() string { return fmt.Sprintf("FOREIGN%d", kt.Seq()) }
	term := kerneltest.Hooks(denial.HookFileOpen, denial.HookFilePermission, denial.HookFileIoctl).Rule(denial.RuleTerminalOutside)
	cases := []kerneltest.Case{
		{Name: "D2 open a host pty for write", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			m := mark()
			return sb.Probe(t, "write-dev", p.path, m), func() (bool, string) { return p.masterSees(m), "the master read " + m }
		}, Want: term},
		{Name: "D2 write a host pty through a descriptor opened outside", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			m := mark()
			return sb.ProbeFiles(t, []*os.File{p.slave}, "tty-fd-write", m), func() (bool, string) { return p.masterSees(m), "the master read " + m }
		}, Want: term},
		{Name: "D2 read a host pty's input through a descriptor opened outside", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			if _, err := p.master.Write([]byte("secret\n")); err != nil {
				t.Fatal(err)
			}
			return sb.ProbeFiles(t, []*os.File{p.slave}, "tty-fd-read"), nil
		}, Want: term},
		{Name: "D2 TIOCSWINSZ on a host pty (SIGWINCH outside)", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "tty-ioctl", p.path, "winsz"), func() (bool, string) {
				ws, err := unix.IoctlGetWinsize(int(p.master.Fd()), unix.TIOCGWINSZ)
				return err == nil && ws.Row == 77, "the pty was resized"
			}
		}, Want: term},
		{Name: "D2 TIOCSWINSZ on a host pty via 32-bit ioctl", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "tty-winsz-compat", p.path), func() (bool, string) {
				ws, err := unix.IoctlGetWinsize(int(p.master.Fd()), unix.TIOCGWINSZ)
				return err == nil && ws.Row == 77, "the pty was resized"
			}
		}, Want: kerneltest.Hooks(denial.HookFileIoctl, denial.HookFileIoctlCompat).Rule(denial.RuleTerminalOutside)},
		{Name: "D2 TCSETS on a host pty", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "tty-ioctl", p.path, "tcsets"), func() (bool, string) {
				tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
				return err == nil && tio.Lflag&unix.ECHO == 0, "echo turned off"
			}
		}, Want: term},
		{Name: "D2 TCXONC stops a host pty's output", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "tty-ioctl", p.path, "tcxonc"), func() (bool, string) {
				fd, err := unix.Open(p.path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(fd)
				_, err = unix.Write(fd, []byte("x"))
				return err == unix.EAGAIN, "output stopped (a write outside: EAGAIN)"
			}
		}, Want: term},
		{Name: "D2 write /dev/tty, redirected to a host pty made the controlling terminal", Prep: prep, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			m := mark()
			return sb.Probe(t, "ctty-write", p.path, m), func() (bool, string) { return p.masterSees(m), "the master read " + m }
		}, Want: kerneltest.Hooks(denial.HookFileOpen, denial.HookFilePermission).Rule(denial.RuleTerminalOutside)},
		{Name: "D2 write /dev/tty2, another virtual console", Prep: allocVT2,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				m := mark()
				return sb.Probe(t, "write-dev", "/dev/tty2", m), func() (bool, string) {
					return strings.Contains(readAll("/dev/vcs2"), m), "/dev/vcs2 shows " + m
				}
			}, Want: term},
		{Name: "D2 write /dev/tty0 (redirected to the foreground console)", Prep: func(t *testing.T) { mustExist(t, "/dev/vcs", "a virtual console") },
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				m := mark()
				return sb.Probe(t, "write-dev", "/dev/tty0", m), func() (bool, string) {
					return strings.Contains(readAll("/dev/vcs"), m), "/dev/vcs shows " + m
				}
			}, Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleTerminalOutside)},
		{Name: "D2 write /dev/console (redirected to the console's tty)", Attempt: kerneltest.Op("write-dev", "/dev/console", "\n"),
			Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleTerminalOutside)},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)

	// Queries stay: isatty() and job control on an inherited terminal.
	t.Run("D2 TCGETS on a host pty is answered", func(t *testing.T) {
		p := newHostPty(t)
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "tty-ioctl", p.path, "tcgets"); r.Errno != 0 || !r.Effect {
			t.Errorf("TCGETS on a read-only host pty: %v, want success", r)
		}
	})
}

// TestOwnTerminals (D2, no false denial): a pty the sandbox creates, and a
// terminal declared at registration, keep working (write, read, resize),
// also through /dev/console when the console's tty is declared.
func TestOwnTerminals(t *testing.T) {
	kt.Enforcer(t)
	t.Run("pty created inside", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "pty-own"); r.Errno != 0 || r.Setup != "" || !r.Effect {
			t.Errorf("a pty of the sandbox's own: %v (effect %v), want success", r, r.Effect)
		}
	})
	t.Run("declared terminal", func(t *testing.T) {
		p := newHostPty(t)
		own := p.terminal(t)
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly, Terminals: []entry.Terminal{own}})
		m := fmt.Sprintf("OWN%d", kt.Seq())
		if r := sb.Probe(t, "write-dev", p.path, m); r.Errno != 0 || !p.masterSees(m) {
			t.Errorf("write a declared terminal: %v, want success and the master reading it", r)
		}
		m = fmt.Sprintf("OWNTTY%d", kt.Seq())
		if r := sb.Probe(t, "ctty-write", p.path, m); r.Errno != 0 || !p.masterSees(m) {
			t.Errorf("write /dev/tty, a declared controlling terminal: %v, want success and the master reading it", r)
		}
		if r := sb.Probe(t, "tty-ioctl", p.path, "winsz"); r.Errno != 0 {
			t.Errorf("resize a declared terminal: %v, want success", r)
		}
		if _, err := p.master.Write([]byte("typed\n")); err != nil {
			t.Fatal(err)
		}
		if r := sb.ProbeFiles(t, []*os.File{p.slave}, "tty-fd-read"); r.Errno != 0 || !r.Effect {
			t.Errorf("read a declared terminal: %v, want its input", r)
		}
		// The same pty number in another devpts instance is another
		// terminal.
		other := kt.Sandbox(t, "case")
		other.Register(t, entry.Entry{Ceiling: tamperOnly, Terminals: []entry.Terminal{{Dev: own.Dev, PtsDev: own.PtsDev + 1}}})
		if r := other.Probe(t, "write-dev", p.path, m); !r.Denied() {
			t.Errorf("write a pty declared in another devpts instance: %v, want EPERM", r)
		}
	})
}

// consoleTerminal is the tty behind /dev/console in the VM (ttyS0).
func consoleTerminal(t *testing.T) (entry.Terminal, string) {
	t.Helper()
	name := strings.Fields(readAll("/sys/class/tty/console/active"))
	if len(name) == 0 {
		t.Fatal("no active console")
	}
	d, err := entry.DeviceOf("/dev/" + name[len(name)-1])
	if err != nil {
		t.Fatal(err)
	}
	return entry.Terminal{Dev: d.Dev}, "/dev/" + name[len(name)-1]
}

// TestConsoleEgress (D3): under network=false with DenyConsoleEgress, a
// declared terminal that is the serial console is refused for writes
// (direct and through /dev/console); without the opt-in it is written.
func TestConsoleEgress(t *testing.T) {
	kt.Enforcer(t)
	con, path := consoleTerminal(t)
	for _, dev := range []string{path, "/dev/console"} {
		t.Run(dev, func(t *testing.T) {
			sb := kt.Sandbox(t, "control")
			sb.Register(t, entry.Entry{Ceiling: netOff, Terminals: []entry.Terminal{con}})
			if r := sb.Probe(t, "write-dev", dev, "\n"); r.Errno != 0 {
				t.Fatalf("write %s, the declared console, without the opt-in: %v, want success", dev, r)
			}
			sb = kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: netOff, Terminals: []entry.Terminal{con}, DenyConsoleEgress: true})
			if r := sb.Probe(t, "write-dev", dev, "\n"); !r.Denied() {
				t.Errorf("BYPASS write %s under network=false with DenyConsoleEgress: %v, want EPERM", dev, r)
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleConsoleEgress))
		})
	}
}

// TestAllowDevices (D4): a device the entry lists is usable; nested, only
// when every registered ancestor lists it (the meet).
func TestAllowDevices(t *testing.T) {
	kt.Enforcer(t)
	dev, err := entry.DeviceOf("/dev/cpu_dma_latency")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("listed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly, AllowDevices: []entry.Device{dev}})
		if r := sb.Probe(t, "dma-latency"); r.Errno != 0 || !r.Effect {
			t.Errorf("a listed device: %v (effect %v), want success", r, r.Effect)
		}
		if r := sb.Probe(t, "watchdog-arm"); !r.Denied() {
			t.Errorf("BYPASS an unlisted device beside a listed one: %v, want EPERM", r)
		}
	})
	t.Run("block device, by type and number", func(t *testing.T) {
		disk := mustEnv(t, "ENFORCERD_VMTEST_EXT_DEV")
		blk, err := entry.DeviceOf(disk)
		if err != nil || !blk.Block {
			t.Fatalf("DeviceOf(%s) = %v, %v; want a block device", disk, blk, err)
		}
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly, AllowDevices: []entry.Device{blk}})
		if r := sb.Probe(t, "read-dev", disk); r.Errno != 0 || !r.Effect {
			t.Errorf("read a listed block device: %v (effect %v), want success", r, r.Effect)
		}
		chr := kt.Sandbox(t, "case")
		chr.Register(t, entry.Entry{Ceiling: tamperOnly, AllowDevices: []entry.Device{{Dev: blk.Dev}}})
		if r := chr.Probe(t, "read-dev", disk); !r.Denied() || r.Effect {
			t.Errorf("BYPASS a block device listed as a character device of the same number: %v, want EPERM", r)
		}
	})
	t.Run("meet with a parent that does not list it", func(t *testing.T) {
		parent := kt.Sandbox(t, "case")
		parent.Register(t, entry.Entry{Ceiling: tamperOnly})
		child := parent.Sub(t)
		child.Register(t, entry.Entry{Ceiling: tamperOnly, AllowDevices: []entry.Device{dev}})
		if r := child.Probe(t, "dma-latency"); !r.Denied() || r.Effect {
			t.Errorf("BYPASS a device only the inner entry lists: %v (effect %v), want EPERM", r, r.Effect)
		}
		kt.Expect(t, child.Cg.ID, kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleHostDevice))
	})
}

// TestForeignTerminalHangup (D2): a session leader of the sandbox cannot
// take a foreign terminal as its controlling terminal (a read-only open
// without O_NOCTTY), so its exit does not hang the terminal up for the
// host process holding it; with O_NOCTTY the open stays allowed.
func TestForeignTerminalHangup(t *testing.T) {
	kt.Enforcer(t)
	var host int
	prep := func(t *testing.T) {
		allocVT2(t)
		fd, err := unix.Open("/dev/tty2", unix.O_WRONLY|unix.O_NOCTTY, 0)
		if err != nil {
			t.Fatalf("open /dev/tty2 outside: %v", err)
		}
		host = fd
		t.Cleanup(func() { unix.Close(fd) })
	}
	kt.Run(t, []kerneltest.Case{{
		Name: "D2 setsid, open /dev/tty2 without O_NOCTTY, exit: the host's descriptor is hung up",
		Prep: prep, Ceiling: tamperOnly,
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "ctty-take", "/dev/tty2"), func() (bool, string) {
				_, err := unix.Write(host, []byte(" "))
				return err == unix.EIO, "a write on the host's /dev/tty2 descriptor: EIO (hung up)"
			}
		},
		Want: kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleTerminalOutside),
	}})

	t.Run("D2 with O_NOCTTY the open is allowed and takes nothing", func(t *testing.T) {
		prep(t)
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "ctty-take", "/dev/tty2", "noctty"); r.Errno != 0 || r.Effect {
			t.Errorf("setsid, open /dev/tty2 O_RDONLY|O_NOCTTY: %v (controlling terminal: %v), want success and not taken", r, r.Effect)
		}
		if _, err := unix.Write(host, []byte(" ")); err != nil {
			t.Errorf("a write on the host's /dev/tty2 after the sandbox's exit: %v, want success", err)
		}
	})
}

// pciResources lists the sysfs BAR files of the VM's PCI devices.
func pciResources(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob("/sys/bus/pci/devices/*/resource[0-9]")
	if err != nil || len(m) == 0 {
		t.Fatalf("no /sys/bus/pci/devices/*/resourceN (%v): the case needs the VM's PCI devices", err)
	}
	return m
}

// mappableResource opens, outside, the first BAR file that maps (a
// memory BAR no driver holds exclusively).
func mappableResource(t *testing.T) *os.File {
	t.Helper()
	for _, p := range pciResources(t) {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		b, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
		if err == nil {
			_ = unix.Munmap(b)
			t.Cleanup(func() { f.Close() })
			return f
		}
		f.Close()
	}
	t.Fatal("no PCI BAR of the VM maps read-only outside: the case needs one")
	return nil
}

// ioResource opens, outside, the first BAR file of an I/O port BAR
// (IORESOURCE_IO in the device's resource listing) that reads.
func ioResource(t *testing.T) *os.File {
	t.Helper()
	for _, p := range pciResources(t) {
		i, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "resource"))
		if err != nil {
			continue
		}
		lines := strings.Split(readAll(filepath.Join(filepath.Dir(p), "resource")), "\n")
		if i >= len(lines) {
			continue
		}
		f := strings.Fields(lines[i])
		if len(f) != 3 {
			continue
		}
		flags, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil || flags&0x100 == 0 {
			continue
		}
		fd, err := os.Open(p)
		if err != nil {
			continue
		}
		if _, err := fd.ReadAt(make([]byte, 4), 0); err != nil {
			fd.Close()
			continue
		}
		t.Cleanup(func() { fd.Close() })
		return fd
	}
	t.Fatal("no PCI I/O BAR of the VM reads outside: the case needs one")
	return nil
}

// TestDeviceRegisterFiles (D1): device memory and registers through
// kernel interface files, without a device node: the sysfs PCI BAR files
// and /proc/bus/pci are refused in any mode, and no sysfs or procfs file
// maps, also through a descriptor opened outside.
func TestDeviceRegisterFiles(t *testing.T) {
	kt.Enforcer(t)
	want := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleHostDevice)
	kt.Run(t, []kerneltest.Case{
		{Name: "D1 read-only open of a PCI BAR in sysfs (resourceN)", Ceiling: tamperOnly,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.Probe(t, "open-ro", pciResources(t)[0]), nil
			}, Want: want},
		{Name: "D1 read-only open of a device's /proc/bus/pci file (config space, PCIIOC_MMAP)", Ceiling: tamperOnly,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				m, _ := filepath.Glob("/proc/bus/pci/*/*.*")
				if len(m) == 0 {
					t.Fatal("no /proc/bus/pci/BB/DD.F: the case needs the VM's PCI devices")
				}
				return sb.Probe(t, "open-ro", m[0]), nil
			}, Want: want},
		{Name: "D1 mmap of a PCI BAR through a descriptor opened outside", Ceiling: tamperOnly,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.ProbeFiles(t, []*os.File{mappableResource(t)}, "mmap-fd"), nil
			}, Want: kerneltest.Hooks(denial.HookMmapFile).Rule(denial.RuleHostDevice)},
		{Name: "D1 pread of a PCI I/O BAR through a descriptor opened outside", Ceiling: tamperOnly,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.ProbeFiles(t, []*os.File{ioResource(t)}, "pread-fd"), nil
			}, Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleHostDevice)},
	})

	// No false denial: lspci's reads stay (configuration space, the BAR
	// listing).
	t.Run("D1 PCI config and resource listing stay readable", func(t *testing.T) {
		dev := filepath.Dir(pciResources(t)[0])
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		for _, f := range []string{"config", "resource", "vendor"} {
			if r := sb.Probe(t, "read-dev", filepath.Join(dev, f)); r.Errno != 0 || !r.Effect {
				t.Errorf("read %s/%s: %v, want its content", dev, f, r)
			}
		}
	})
}
