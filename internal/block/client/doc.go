// Package client is a block.Store and block.Lister that talks to one block
// server (package server) over HTTP/1.1.
//
// Contract. Get and GetInto verify what they receive against the hash: a
// mismatch, or a server reporting its own copy corrupt, is an error wrapping
// block.ErrCorrupt and is never retried (another replica may be good; that is
// the caller's choice). GetRange cannot verify a part of a block: callers that
// need integrity fetch whole blocks. Replies map to the block errors: 404 to
// ErrNotFound, 422 to ErrHashMismatch, 507 to ErrNoSpace.
//
// Retries and deadlines. Every call is bounded: each try runs under a
// watchdog (Options.AttemptTimeout plus the time the body takes at
// Options.MinRate) and a call makes no new try once its budget
// (Options.Budget, scaled the same way) is spent. Transport errors, timeouts
// and 5xx replies other than corruption are retried, up to Options.Tries
// tries with exponential backoff; when they run out the error wraps
// block.ErrUnavailable and names the server. A stopped or hung server
// therefore yields ErrUnavailable within about Budget (3 s by default). A
// cancelled ctx ends the call at once with ctx's error. All of this time is
// Options.Clock's (the real clock unless a test gives a clock.Fake).
//
// Connections. Clients of many servers should share one Transport (see
// NewTransport: HTTP/1.1 only, 64 idle connections per host).
//
// Security. With Options.Creds the client speaks HTTPS (NewTLSTransport):
// the server is verified against the cluster CA, the process's certificate
// is presented, and a person's token (Creds.Token) goes as "Authorization:
// Bearer". The TLS runs over a tlsconn.Conn: a Put's records leave in
// 256 KiB writes and GetInto reads under a low-water mark, as on plain TCP. A 401 is an error wrapping auth.ErrUnauthenticated, a 403 one
// wrapping auth.ErrDenied; neither is retried.
package client
