package entry

import (
	"errors"
	"fmt"

	"github.com/enforcerd/enforcerd/endpoint"
)

// MaxEndpoints is the most endpoints one entry may list (MAX_ENDPOINTS in
// bpf/endpoints.h; endpoint.Max).
const MaxEndpoints = endpoint.Max

// ErrBadEndpoints is wrapped when an entry's AllowConnect cannot be
// registered as given (see CheckEndpoints).
var ErrBadEndpoints = errors.New("bad allowed endpoints")

// CheckEndpoints: AllowConnect needs network=false (with network allowed
// the list would mislead), at most MaxEndpoints, every unix endpoint
// resolved (endpoint.Resolve) and no tcp/udp port 0.
func CheckEndpoints(en Entry) error {
	if len(en.AllowConnect) == 0 {
		return nil
	}
	if en.Ceiling.Network {
		return fmt.Errorf("%w: allowed endpoints need network=false (network is allowed)", ErrBadEndpoints)
	}
	if len(en.AllowConnect) > MaxEndpoints {
		return fmt.Errorf("%w: %d endpoints, at most %d", ErrBadEndpoints, len(en.AllowConnect), MaxEndpoints)
	}
	for _, ep := range en.AllowConnect {
		switch ep.Kind {
		case endpoint.TCP, endpoint.UDP:
			if ep.Port == 0 || !ep.Addr.IsValid() {
				return fmt.Errorf("%w: %s: no address or port", ErrBadEndpoints, ep)
			}
		case endpoint.Unix:
			if ep.Ino == 0 {
				return fmt.Errorf("%w: %s: not resolved to a socket file", ErrBadEndpoints, ep)
			}
		default:
			return fmt.Errorf("%w: unknown kind %q", ErrBadEndpoints, ep.Kind)
		}
	}
	return nil
}
