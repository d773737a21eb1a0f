package proxy

import (
	"net/netip"
)

// Address classes the proxy refuses by default (Policy.checkIP). The rule
// is an allow list: only global unicast addresses outside every
// special-purpose block (IANA IPv4 and IPv6 Special-Purpose Address
// Registries, RFC 6890) are reachable; everything else is named here so a
// refusal says why.
const (
	ClassLoopback    = "loopback"
	ClassPrivate     = "private"    // RFC 1918, RFC 4193 ULA
	ClassLinkLocal   = "link-local" // 169.254/16, fe80::/10
	ClassCGNAT       = "cgnat"      // 100.64/10, RFC 6598
	ClassMulticast   = "multicast"
	ClassUnspecified = "unspecified"
	ClassMetadata    = "cloud-metadata"
	ClassReserved    = "special-purpose"
	ClassEmbedded    = "embeds-ipv4" // NAT64, 6to4, Teredo: an IPv4 address inside
)

// metadataBlocks hold cloud instance metadata and credential endpoints:
// AWS IMDS, DNS and NTP (169.254.169.0/24, fd00:ec2::/32 with IMDS at
// fd00:ec2::254), the ECS task metadata and EKS Pod Identity agents
// (169.254.170.2, 169.254.170.23, fd00:ec2::23), GCP, Azure and Oracle
// IMDS (169.254.169.254), Tencent Cloud (169.254.0.23), Alibaba Cloud
// (100.100.100.200) and Azure's WireServer (168.63.129.16, a public
// address). Whole blocks, not single addresses: a provider's next agent
// lands next to the last one. An address in them can be allowed only by
// its exact address in the allow_private list, never by a name or a
// prefix.
var metadataBlocks = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.0/24"),
	netip.MustParsePrefix("169.254.170.0/24"),
	netip.MustParsePrefix("169.254.0.0/24"),
	netip.MustParsePrefix("fd00:ec2::/32"),
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("168.63.129.16/32"),
}

// isMetadata reports whether ip lies in a metadataBlocks block.
func isMetadata(ip netip.Addr) bool {
	for _, p := range metadataBlocks {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// reserved are special-purpose blocks not covered by netip's predicates.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("2001:20::/28"),    // ORCHIDv2
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::ffff:0:0/96"), // (unmapped before the check)
	netip.MustParsePrefix("::/96"),         // IPv4-compatible (deprecated)
}

// embedding are IPv6 blocks that carry an IPv4 address a gateway may
// forward to (so "64:ff9b::a00:1" may reach 10.0.0.1).
var embedding = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 well-known prefix
	netip.MustParsePrefix("64:ff9b:1::/48"), // NAT64 local-use
	netip.MustParsePrefix("2002::/16"),      // 6to4
	netip.MustParsePrefix("2001::/32"),      // Teredo
}

// Classify returns "" for an address the proxy may dial by default, or the
// class that refuses it. IPv4-mapped IPv6 addresses are classified as
// their IPv4 address.
func Classify(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return ClassUnspecified
	case isMetadata(ip):
		return ClassMetadata
	case ip.IsUnspecified():
		return ClassUnspecified
	case ip.IsLoopback():
		return ClassLoopback
	case ip.IsPrivate():
		return ClassPrivate
	case ip.IsLinkLocalUnicast():
		return ClassLinkLocal
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return ClassMulticast
	case cgnat.Contains(ip):
		return ClassCGNAT
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return ClassReserved
		}
	}
	for _, p := range embedding {
		if p.Contains(ip) {
			return ClassEmbedded
		}
	}
	if !ip.IsGlobalUnicast() {
		return ClassReserved
	}
	return ""
}
