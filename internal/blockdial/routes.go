package blockdial

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// RoutesEnv names the environment variable that reroutes this process's
// connections to block servers: "ADDR=VIA,ADDR=VIA" dials VIA whenever a
// block server at ADDR is dialed. TLS still checks the certificate against
// ADDR, the address the server registered: VIA is only where the bytes go.
//
// It exists for emulated WANs on one machine (test/cluster's Sites and
// bench/multisite.sh, issue 13): a block server registers one address,
// but each site must reach it through its own link (internal/wan), as a
// real site reaches another through its own route. Unset, nothing changes.
const RoutesEnv = "TESSERA_ROUTES"

// routes parses RoutesEnv; a malformed entry is an error naming it, so that a
// typo never silently sends traffic around the emulated WAN.
func routes() (map[string]string, error) {
	v := strings.TrimSpace(os.Getenv(RoutesEnv))
	if v == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, e := range strings.Split(v, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("%s: entry %q: want ADDR=VIA", RoutesEnv, e)
		}
		for _, a := range []string{from, to} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("%s: entry %q: %w", RoutesEnv, e, err)
			}
		}
		m[from] = to
	}
	return m, nil
}

// reroute makes t dial through the routes of RoutesEnv.
func reroute(t *http.Transport) error {
	m, err := routes()
	if err != nil || m == nil {
		return err
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if via, ok := m[addr]; ok {
			addr = via
		}
		return dial(ctx, network, addr)
	}
	return nil
}
