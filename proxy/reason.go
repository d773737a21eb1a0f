package proxy

import "net/http"

// Reasons of a decision: the audit record's "reason" and the
// X-Enforcerd-Reason header of a refusal.
const (
	ReasonAllowed = "allowed"
	// ReasonBadRequest (400): malformed or unsupported request target,
	// Host header mismatch, not a proxy request.
	ReasonBadRequest = "bad_request"
	// ReasonClientUnidentified (403): under the daemon, the client's
	// cgroup (and so its container) could not be established.
	ReasonClientUnidentified = "client_unidentified"
	// ReasonPortNotAllowed (403): the port is not in allow_ports.
	ReasonPortNotAllowed = "port_not_allowed"
	// ReasonDomainNotAllowed (403): the name is not in allow_domains.
	ReasonDomainNotAllowed = "domain_not_allowed"
	// ReasonContainerDomainNotAllowed (403): allowed globally, but not by
	// the proxy_allow list of the client's container (or of a container
	// enclosing it).
	ReasonContainerDomainNotAllowed = "container_domain_not_allowed"
	// ReasonDestinationRefused (403): every address of the destination is
	// non-public (Classify) and not in allow_private.
	ReasonDestinationRefused = "destination_refused"
	// ReasonResolveFailed (502): the name has no address.
	ReasonResolveFailed = "resolve_failed"
	// ReasonDialFailed (502): no allowed address accepted the connection.
	ReasonDialFailed = "dial_failed"
	// ReasonUpstreamFailed (502): the forwarded HTTP exchange failed.
	ReasonUpstreamFailed = "upstream_failed"
	// ReasonTooManyConnections (429): the client (its cgroup; every
	// unidentified client counts as one) or the proxy as a whole holds
	// as many open connections as Options allow.
	ReasonTooManyConnections = "too_many_connections"
)

// AllReasons lists every reason (TestAllReasonsHaveStatus keeps it whole).
var AllReasons = []string{
	ReasonAllowed, ReasonBadRequest, ReasonClientUnidentified, ReasonPortNotAllowed,
	ReasonDomainNotAllowed, ReasonContainerDomainNotAllowed, ReasonDestinationRefused,
	ReasonResolveFailed, ReasonDialFailed, ReasonUpstreamFailed, ReasonTooManyConnections,
}

// ReasonHeader carries the reason of a refusal to the client.
const ReasonHeader = "X-Enforcerd-Reason"

// statusOf is the HTTP status of a refusal.
func statusOf(reason string) int {
	switch reason {
	case ReasonAllowed:
		return http.StatusOK
	case ReasonBadRequest:
		return http.StatusBadRequest
	case ReasonResolveFailed, ReasonDialFailed, ReasonUpstreamFailed:
		return http.StatusBadGateway
	case ReasonTooManyConnections:
		return http.StatusTooManyRequests
	default:
		return http.StatusForbidden
	}
}
