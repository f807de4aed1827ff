package client

import (
	"net/http"

	"tessera/internal/auth"
)

// NewTLSTransport is NewTransport speaking TLS with creds (package auth's
// client configuration: the server verified against the CA, the holder's
// certificate presented); nil creds: plain HTTP, as NewTransport.
func NewTLSTransport(creds *auth.Credentials) *http.Transport {
	t := NewTransport()
	if creds != nil {
		t.TLSClientConfig = creds.ClientConfig()
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
