package server

import (
	"context"
	"io"
	"net"
	"net/http"

	"tessera/internal/block/tlsconn"
	"tessera/internal/clock"
	"tessera/internal/lowat"
)

// requestBuffer is what net/http's server may already hold of a body when
// the handler starts: it reads requests through a 4 KiB bufio.Reader.
const requestBuffer = 4 << 10

type connKey struct{}

// connContext records each connection in its requests' contexts, for
// readFull.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// readFull fills data from r's body in few, large reads (package lowat)
// and returns how many it took. On TLS the mark is set on the socket
// beneath, below what is still to come less what crypto/tls may hold
// (tlsconn.Raw).
func readFull(clk clock.Clock, r *http.Request, body io.Reader, data []byte) (reads int, err error) {
	raw, held := tlsconn.Raw(connOf(r))
	return lowat.ReadFullClock(clk, raw, body, data, requestBuffer+held)
}

// connOf returns the connection r arrived on (nil if unknown).
func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}
