package metarpc

import (
	"context"
	"log/slog"
	"net"

	"google.golang.org/grpc/credentials"
)

// handshakes wraps transport credentials to see each handshake's outcome:
// the server logs the ones that fail (a wrong CA, an expired certificate,
// garbage), which gRPC would only tell its own logger; the client records
// them (dialWatch), so that a call or Dial reports why it could not
// connect instead of waiting out its time.
type handshakes struct {
	credentials.TransportCredentials
	log   *slog.Logger // server side
	guard *msgGuard    // server side
	dials *dialWatch   // client side
}

func (h *handshakes) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := h.TransportCredentials.ServerHandshake(c)
	if err != nil && h.log != nil {
		h.log.Warn("meta rpc refused a connection", "peer", c.RemoteAddr().String(), "why", "handshake: "+err.Error())
	}
	if err == nil && h.log != nil { // a server's: watch the plaintext for requests in tiny pieces
		nc = h.guard.watch(nc, h.log)
	}
	return nc, ai, err
}

func (h *handshakes) ClientHandshake(ctx context.Context, authority string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := h.TransportCredentials.ClientHandshake(ctx, authority, c)
	if h.dials != nil {
		h.dials.done(err)
	}
	return nc, ai, err
}

func (h *handshakes) Clone() credentials.TransportCredentials {
	return &handshakes{TransportCredentials: h.TransportCredentials.Clone(), log: h.log, guard: h.guard, dials: h.dials}
}
