package proxy

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	for ip, want := range map[string]string{
		"93.184.216.34": "", "2606:4700::1": "", "8.8.8.8": "",
		"127.0.0.1": ClassLoopback, "127.3.4.5": ClassLoopback, "::1": ClassLoopback, "::ffff:127.0.0.1": ClassLoopback,
		"10.1.2.3": ClassPrivate, "172.16.0.1": ClassPrivate, "192.168.1.1": ClassPrivate, "fd12::1": ClassPrivate,
		"169.254.1.1": ClassLinkLocal, "fe80::1": ClassLinkLocal, "100.64.0.1": ClassCGNAT, "100.127.255.255": ClassCGNAT,
		"224.0.0.1": ClassMulticast, "ff02::1": ClassMulticast, "0.0.0.0": ClassUnspecified, "::": ClassUnspecified,
		"169.254.169.254": ClassMetadata, "fd00:ec2::254": ClassMetadata, "100.100.100.200": ClassMetadata,
		"0.1.2.3": ClassReserved, "192.0.2.1": ClassReserved, "198.18.0.1": ClassReserved, "255.255.255.255": ClassReserved,
		"240.0.0.1": ClassReserved, "2001:db8::1": ClassReserved,
		"64:ff9b::a00:1": ClassEmbedded, "2002:a00:1::": ClassEmbedded, "2001::1": ClassEmbedded,
	} {
		if got := Classify(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", ip, got, want)
		}
	}
}
