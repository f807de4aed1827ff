package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"tessera/internal/auth"
	"tessera/internal/block/tlsconn"
)

// Class of the replies to requests without a valid identity (401) and to
// identities whose role lacks the route's permission (403).
const (
	ClassUnauthenticated = "unauthenticated"
	ClassDenied          = "denied"
)

// authenticate returns the caller's identity: the verified client
// certificate's, or the bearer token's, or auth.Insecure on a server
// without credentials (started with --insecure).
func (h *Handler) authenticate(r *http.Request) (auth.Identity, error) {
	if h.creds == nil {
		return auth.Insecure, nil
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return auth.PeerIdentity(r.TLS)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		if !ok {
			return auth.Identity{}, fmt.Errorf("%w: Authorization header is not \"Bearer TOKEN\"", auth.ErrUnauthenticated)
		}
		return h.tokens.Verify(strings.TrimSpace(tok))
	}
	if r.TLS == nil {
		return auth.Identity{}, fmt.Errorf("%w: plain HTTP to a TLS server", auth.ErrUnauthenticated)
	}
	return auth.Identity{}, fmt.Errorf("%w: no client certificate and no bearer token", auth.ErrUnauthenticated)
}

// authorize authenticates r and checks that its caller may p; otherwise it
// answers 401 or 403, logs the refusal (at a bounded rate) and returns
// false. A has with ?touch=1 also needs WriteBlocks: touching keeps blocks
// from the collector, as a write would.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, p auth.Permission) (auth.Identity, bool) {
	id, err := h.authenticate(r)
	if err == nil {
		err = id.Check(p)
		if err == nil && r.URL.Path == "/v1/has" && r.URL.Query().Get("touch") == "1" {
			err = id.Check(auth.WriteBlocks)
		}
	}
	if err == nil {
		return id, true
	}
	code, class := http.StatusForbidden, ClassDenied
	if errors.Is(err, auth.ErrUnauthenticated) {
		code, class = http.StatusUnauthorized, ClassUnauthenticated
		w.Header().Set("WWW-Authenticate", `Bearer realm="tessera"`)
	}
	who := "unknown"
	if id.Name != "" {
		who = id.String()
	}
	h.refused.Log(h.log, slog.LevelWarn, "block request refused",
		"who", who, "peer", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "status", code, "why", err)
	h.fail(w, r, code, class, err)
	return auth.Identity{}, false
}

// Listener returns ln serving TLS with creds' server configuration, or ln
// itself without credentials (plain HTTP, --insecure). The TLS is
// crypto/tls's over a tlsconn.Conn, whose gathered writes and bounded
// read-ahead let the handler send and receive blocks in few system calls
// (getVerified, readFull).
func Listener(ln net.Listener, creds *auth.Credentials) net.Listener {
	if creds == nil {
		return ln
	}
	return tlsconn.Listener(ln, creds.ServerConfig())
}
