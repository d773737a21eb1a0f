package registry

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// meetEntry is the narrower of the kernel's and the state's entry in
// every field that can narrow, and commutative in what it allows.
func TestMeetEntryNarrowsEveryField(t *testing.T) {
	ep := func(port uint16) endpoint.Endpoint {
		return endpoint.Endpoint{Kind: endpoint.TCP, Addr: netip.MustParseAddr("10.0.0.1"), Port: port}
	}
	unix := endpoint.Endpoint{Kind: endpoint.Unix, Path: "/run/x.sock", Dev: 1, Ino: 2, Ctime: 3}
	unixKernel := unix
	unixKernel.Path = "" // the map keeps no path
	root := func(ino uint64) entry.FileID { return entry.FileID{Dev: 9, Ino: ino} }
	dev := func(n uint32) entry.Device { return entry.Device{Dev: 10<<20 | n} }
	open := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}
	noNet := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	noWrite := policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	cases := []struct {
		name string
		k, s entry.Entry
		want string
	}{
		{"network: kernel narrower", entry.Entry{Ceiling: noNet}, entry.Entry{Ceiling: open},
			"network=false,write=true,shell=full conn=[] roots=[] devs=[] audit=false pending=false egress=false"},
		{"shell: kernel narrower", entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}}, entry.Entry{Ceiling: open},
			"network=true,write=true,shell=none conn=[] roots=[] devs=[] audit=false pending=false egress=false"},
		{"allow_connect: both denied, the intersection, the state's path kept",
			entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{ep(1), ep(2), unixKernel}},
			entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{ep(2), ep(3), unix}},
			"network=false,write=true,shell=full conn=[tcp:10.0.0.1:2 unix:/run/x.sock] roots=[] devs=[] audit=false pending=false egress=false"},
		{"allow_connect: kernel open, the state's list",
			entry.Entry{Ceiling: open}, entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{ep(2)}},
			"network=false,write=true,shell=full conn=[tcp:10.0.0.1:2] roots=[] devs=[] audit=false pending=false egress=false"},
		{"allow_connect: kernel denied without a list wins",
			entry.Entry{Ceiling: noNet}, entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{ep(2)}},
			"network=false,write=true,shell=full conn=[] roots=[] devs=[] audit=false pending=false egress=false"},
		{"write roots: the intersection",
			entry.Entry{Ceiling: noWrite, WriteRoots: []entry.FileID{root(1), root(2)}},
			entry.Entry{Ceiling: noWrite, WriteRoots: []entry.FileID{root(2), root(3)}},
			"network=true,write=false,shell=full conn=[] roots=[{9 2}] devs=[] audit=false pending=false egress=false"},
		{"write roots: state open, the kernel's",
			entry.Entry{Ceiling: noWrite, WriteRoots: []entry.FileID{root(1)}}, entry.Entry{Ceiling: open},
			"network=true,write=false,shell=full conn=[] roots=[{9 1}] devs=[] audit=false pending=false egress=false"},
		{"devices, audit-only, pending, console egress",
			entry.Entry{Ceiling: open, AllowDevices: []entry.Device{dev(1), dev(2)}, AuditOnly: true, Pending: true},
			entry.Entry{Ceiling: open, AllowDevices: []entry.Device{dev(2)}, AuditOnly: false, Pending: true, DenyConsoleEgress: true},
			"network=true,write=true,shell=full conn=[] roots=[] devs=[c 10:2] audit=false pending=true egress=true"},
	}
	show := func(m entry.Entry) string {
		var conn []string
		for _, e := range m.AllowConnect {
			conn = append(conn, e.String())
		}
		return fmt.Sprintf("%s conn=%v roots=%v devs=%v audit=%v pending=%v egress=%v",
			m.Ceiling, conn, m.WriteRoots, m.AllowDevices, m.AuditOnly, m.Pending, m.DenyConsoleEgress)
	}
	for _, tc := range cases {
		if got := show(meetEntry(tc.k, tc.s)); got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
		if d := entryDiff(tc.k, tc.s); d == "" {
			t.Errorf("%s: entryDiff found no difference", tc.name)
		}
	}
	if d := entryDiff(entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{unixKernel}}, entry.Entry{Ceiling: noNet, AllowConnect: []endpoint.Endpoint{unix}}); d != "" {
		t.Errorf("a unix endpoint with and without its path differ in %q", d)
	}
}
