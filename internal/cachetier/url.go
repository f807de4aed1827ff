package cachetier

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrBadURL reports a malformed cache tier URL.
var ErrBadURL = errors.New("bad cache tier URL")

// Scheme is the URL scheme of a memcached pool.
const Scheme = "memcached"

// ParseURL parses "memcached://host:port[,host:port…]" into the servers'
// addresses, in order. Errors wrap ErrBadURL and name the bad part.
func ParseURL(s string) ([]string, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, fmt.Errorf("%w %q: want %s://host:port[,host:port…]", ErrBadURL, s, Scheme)
	}
	if !strings.EqualFold(scheme, Scheme) {
		return nil, fmt.Errorf("%w %q: scheme %q, want %q", ErrBadURL, s, scheme, Scheme)
	}
	rest = strings.TrimSuffix(rest, "/")
	if i := strings.IndexAny(rest, "/?#@"); i >= 0 {
		return nil, fmt.Errorf("%w %q: unexpected %q after the server list (no path, query or user)", ErrBadURL, s, rest[i:])
	}
	if rest == "" {
		return nil, fmt.Errorf("%w %q: empty server list", ErrBadURL, s)
	}
	parts := strings.Split(rest, ",")
	addrs := make([]string, 0, len(parts))
	seen := map[string]bool{}
	for i, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%w %q: server %d is empty", ErrBadURL, s, i+1)
		}
		if !strings.Contains(p, ":") || strings.HasSuffix(p, "]") {
			return nil, fmt.Errorf("%w %q: server %q has no port (want host:port; memcached's is usually 11211)", ErrBadURL, s, p)
		}
		host, port, err := net.SplitHostPort(p)
		if err != nil {
			return nil, fmt.Errorf("%w %q: server %q: %v", ErrBadURL, s, p, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%w %q: server %q has no host", ErrBadURL, s, p)
		}
		if strings.ContainsAny(host, " \t") {
			return nil, fmt.Errorf("%w %q: server %q: host has a space", ErrBadURL, s, p)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return nil, fmt.Errorf("%w %q: server %q: port %q is not a number in 1..65535", ErrBadURL, s, p, port)
		}
		if seen[p] {
			return nil, fmt.Errorf("%w %q: server %q is listed twice", ErrBadURL, s, p)
		}
		seen[p] = true
		addrs = append(addrs, p)
	}
	return addrs, nil
}
