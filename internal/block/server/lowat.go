package server

import (
	"context"
	"io"
	"net"
	"net/http"

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
// and returns how many it took.
func readFull(clk clock.Clock, r *http.Request, body io.Reader, data []byte) (reads int, err error) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return lowat.ReadFullClock(clk, c, body, data, requestBuffer)
}
