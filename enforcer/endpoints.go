package enforcer

import (
	"encoding/binary"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
)

// The endpoint kinds of struct endpoint (bpf/endpoints.h).
const (
	endpointTCP  = uint32(bpf.SharedEndpointKindENDPOINT_TCP)
	endpointUDP  = uint32(bpf.SharedEndpointKindENDPOINT_UDP)
	endpointUnix = uint32(bpf.SharedEndpointKindENDPOINT_UNIX)
)

// encodeEndpoints gives the kernel form of a list (struct endpoint_list).
func encodeEndpoints(es []endpoint.Endpoint) bpf.SharedEndpointList {
	var l bpf.SharedEndpointList
	for i, ep := range es {
		if i >= entry.MaxEndpoints {
			break
		}
		k := &l.Ep[i]
		switch ep.Kind {
		case endpoint.TCP, endpoint.UDP:
			k.Kind = endpointTCP
			if ep.Kind == endpoint.UDP {
				k.Kind = endpointUDP
			}
			k.Port = uint32(ep.Port)
			b := ep.Addr.As16() // IPv4 as ::ffff:a.b.c.d
			k.A = binary.LittleEndian.Uint64(b[0:8])
			k.B = binary.LittleEndian.Uint64(b[8:16])
		case endpoint.Unix:
			k.Kind = endpointUnix
			k.A = uint64(ep.Dev)
			k.B = ep.Ino
			k.C = ep.Ctime
		}
		l.Kinds |= 1 << k.Kind
		l.Count++
	}
	return l
}

// decodeEndpoints reads a list back; unix endpoints have no path.
func decodeEndpoints(l bpf.SharedEndpointList) []endpoint.Endpoint {
	var out []endpoint.Endpoint
	for i := 0; i < int(l.Count) && i < entry.MaxEndpoints; i++ {
		k := l.Ep[i]
		switch k.Kind {
		case endpointTCP, endpointUDP:
			var b [16]byte
			binary.LittleEndian.PutUint64(b[0:8], k.A)
			binary.LittleEndian.PutUint64(b[8:16], k.B)
			kind := endpoint.TCP
			if k.Kind == endpointUDP {
				kind = endpoint.UDP
			}
			out = append(out, endpoint.Endpoint{Kind: kind, Addr: netip.AddrFrom16(b).Unmap(), Port: uint16(k.Port)})
		case endpointUnix:
			out = append(out, endpoint.Endpoint{Kind: endpoint.Unix, Dev: uint32(k.A), Ino: k.B, Ctime: k.C})
		}
	}
	return out
}

// endpointsMap is the pinned connect_allow map.
func (e *Enforcer) endpointsMap() *ebpf.Map { return e.shared[bpf.SharedMapConnectAllow] }

// setEndpoints writes the list of a cgroup (an empty list removes it) and
// returns how to put back what was there. Register calls it before the
// ceiling is written, so a ceiling is never in force with a list it was
// not registered with for longer than the registration takes.
func (e *Enforcer) setEndpoints(cgroupID uint64, es []endpoint.Endpoint) (undo func(), err error) {
	var v *bpf.SharedEndpointList
	if len(es) > 0 {
		l := encodeEndpoints(es)
		v = &l
	}
	return replaceCgroupValue(e.endpointsMap(), cgroupID, v, "allowed endpoints", "connect_allow")
}

// dropEndpoints removes the list of a cgroup.
func (e *Enforcer) dropEndpoints(cgroupID uint64) {
	if m := e.endpointsMap(); m != nil {
		_ = m.Delete(cgroupID)
	}
}

// lookupEndpoints reads the list of a cgroup (nil: none).
func (e *Enforcer) lookupEndpoints(cgroupID uint64) []endpoint.Endpoint {
	m := e.endpointsMap()
	if m == nil {
		return nil
	}
	var l bpf.SharedEndpointList
	if err := m.Lookup(cgroupID, &l); err != nil {
		return nil
	}
	return decodeEndpoints(l)
}
