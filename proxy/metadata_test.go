package proxy

// Cloud metadata and credential endpoints are refused by the egress proxy
// even inside an allow_private prefix. A case that documents a confirmed
// weakness FAILS until it is closed.

import (
	"net/netip"
	"testing"
	"time"
)

// Cloud credential endpoints beyond the first four metadata addresses: allow_private
// with a link-local or ULA prefix (a cluster's pod network, a VPC's IPv6
// ULA range) lifts the refusal of every address in it, and only the four
// listed metadata addresses are kept back "by exact address only". The
// EKS Pod Identity agent (169.254.170.23, fd00:ec2::23) hands out the
// pod's AWS credentials over plain HTTP on every EKS node; Tencent Cloud's
// instance metadata (metadata.tencentyun.com) is 169.254.0.23. Under such
// a prefix they pass the address check like any pod or VPC address; they
// must be refused as cloud metadata unless listed by their exact address.
func TestAttackProxyMetadataByPrefix(t *testing.T) {
	cfg := Config{
		AllowDomains: []string{"api.example.com"},
		AllowPrivate: []string{"169.254.0.0/16", "fd00::/8"},
		ListenTCP:    "127.0.0.1:0",
		DialTimeout:  time.Second,
	}
	pol, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	// The control: the listed metadata address stays refused under the
	// same prefix.
	if c := pol.checkIP("", netip.MustParseAddr("169.254.169.254")); c != ClassMetadata {
		t.Fatalf("169.254.169.254 under allow_private 169.254.0.0/16: %q, want %q (control)", c, ClassMetadata)
	}
	for _, ip := range []string{"169.254.170.23", "fd00:ec2::23", "169.254.0.23"} {
		if c := pol.checkIP("", netip.MustParseAddr(ip)); c != ClassMetadata {
			t.Errorf("BYPASS %s (a cloud credential endpoint) under allow_private 169.254.0.0/16, fd00::/8: class %q, want %q (exact address only)", ip, c, ClassMetadata)
		}
	}
}
