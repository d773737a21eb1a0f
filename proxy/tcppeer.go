package proxy

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/enforcerd/enforcerd/cgroup"
)

// tcpPeer finds the process at the other end of a loopback TCP connection:
// the client's socket is the row of /proc/net/tcp{,6} (this network
// namespace) whose local address is the connection's remote address and
// whose remote address is its local address; its inode is then looked up
// among every process's /proc/PID/fd. Processes sharing the socket (after
// fork) must all be in one cgroup, else the client is unidentified: the
// answer must not depend on which sharer is found first.
func tcpPeer(c *net.TCPConn) (int, string, error) {
	local, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	remote, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err1 != nil || err2 != nil {
		return 0, "", fmt.Errorf("%w: addresses %s %s", errUnidentified, c.RemoteAddr(), c.LocalAddr())
	}
	inode := ""
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if inode, err1 = findSocketInode(f, local, remote); err1 != nil {
			return 0, "", err1
		}
		if inode != "" {
			break
		}
	}
	if inode == "" {
		return 0, "", fmt.Errorf("%w: no socket %s -> %s in /proc/net/tcp", errUnidentified, local, remote)
	}
	want := "socket:[" + inode + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*")
	pid, group := 0, ""
	for _, dir := range procs {
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err != nil || l != want {
				continue
			}
			p, _ := strconv.Atoi(filepath.Base(dir))
			g, err := cgroup.PidGroup(p)
			if err != nil {
				continue
			}
			if pid != 0 && g != group {
				return 0, "", fmt.Errorf("%w: socket shared by pids %d and %d in different cgroups", errUnidentified, pid, p)
			}
			pid, group = p, g
			break
		}
	}
	if pid == 0 {
		return 0, "", fmt.Errorf("%w: no process holds socket inode %s", errUnidentified, inode)
	}
	return pid, group, nil
}

// findSocketInode scans a /proc/net/tcp table for the row local -> remote.
func findSocketInode(path string, local, remote netip.AddrPort) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil
		}
		return "", fmt.Errorf("%w: %v", errUnidentified, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		l, ok1 := parseProcAddr(fs[1])
		r, ok2 := parseProcAddr(fs[2])
		if ok1 && ok2 && l.Addr().Unmap() == local.Addr().Unmap() && l.Port() == local.Port() &&
			r.Addr().Unmap() == remote.Addr().Unmap() && r.Port() == remote.Port() {
			return fs[9], nil
		}
	}
	return "", sc.Err()
}

// parseProcAddr decodes "0100007F:1F90" (IPv4) or the 32-hex-digit IPv6
// form: the address is in host byte order per 32-bit word (little-endian
// on every architecture this runs on), the port big-endian hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, false
	}
	out := make([]byte, len(b))
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	ip, _ := netip.AddrFromSlice(out)
	return netip.AddrPortFrom(ip, uint16(port)), true
}
