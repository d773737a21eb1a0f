// Package egress is the syntax of enforcerd's egress domain allow lists:
// host names in their canonical form (NormalizeHost), domain patterns
// ("api.example.com", "*.example.org", IP literals: Patterns), and a
// container's proxy_allow value (ParseAllowList). The egress proxy
// (proxy/) matches requests against these lists; the OCI annotations
// (oci/) and the registry (daemon/registry) check them at registration,
// without linking the proxy server.
//
// It is a leaf: it imports the standard library and golang.org/x/net/idna
// (UTS #46 mapping) only, and does no I/O.
package egress
