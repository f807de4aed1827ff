package home

import (
	"net/http"
	"net/http/httptrace"
)

// staleConnRetry sends a body-less GET or HEAD once more, on a new
// connection, when the answer to it on a reused keep-alive connection was a
// 400 that closes the connection. Such an answer is not about the request
// (the client built it; the same request on a fresh connection succeeds):
// it is a server that read a kept connection's stale or cut bytes as a
// request (versitygw's fasthttp does so under load, seen in
// TestS3KeepsConnections) and the client's request met that reply. Go's
// transport already resends a request whose reused connection failed
// before any answer; this covers the answered case, for idempotent
// requests only.
type staleConnRetry struct {
	rt http.RoundTripper
}

func (s staleConnRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	if (req.Method != http.MethodGet && req.Method != http.MethodHead) || (req.Body != nil && req.Body != http.NoBody) {
		return s.rt.RoundTrip(req)
	}
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	resp, err := s.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil || !reused || resp.StatusCode != http.StatusBadRequest || !resp.Close {
		return resp, err
	}
	resp.Body.Close()
	return s.rt.RoundTrip(req) // the closed connection is not reused: a new one
}
