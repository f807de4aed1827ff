package client

import (
	"context"
	"net"
	"net/http"

	"tessera/internal/auth"
	"tessera/internal/block/tlsconn"
)

// NewTLSTransport is NewTransport speaking TLS with creds (package auth's
// client configuration: the server verified against the CA, the holder's
// certificate presented); nil creds: plain HTTP, as NewTransport. The TLS
// is crypto/tls's over a tlsconn.Conn (tlsconn.Dialer), whose gathered
// writes and bounded read-ahead let Put and GetInto move blocks in few
// system calls.
func NewTLSTransport(creds *auth.Credentials) *http.Transport {
	t := NewTransport()
	if creds != nil {
		t.TLSClientConfig = creds.ClientConfig()
		// t.DialContext looked up per dial: a caller may wrap it.
		t.DialTLSContext = tlsconn.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			return t.DialContext(ctx, network, addr)
		}, t.TLSClientConfig)
	}
	return t
}

// bearer adds an Authorization header to every request: the token of a
// person without a certificate (auth.Credentials.Token).
type bearer struct {
	rt     http.RoundTripper
	header string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not change its request
	r.Header.Set("Authorization", b.header)
	return b.rt.RoundTrip(r)
}
