// Package metarpc carries meta.API over TCP: Serve exposes any meta.API,
// and the Client returned by Dial implements meta.API against it.
//
// Protocol. gRPC with protobuf, one service per concern of the API
// (tessera.meta.v1.FSService, ClusterService, SessionsService,
// FilesetService, WritebackService, QuotaService: services.go;
// proto/tessera/meta/v1/meta.proto, generated code in metapb, regenerated
// by `make proto`; docs/protocol.md). One method per API method, WalkBlocks
// as pages of ListBlocks, Callbacks as one stream per session. A call of a
// service the server lacks (version 1's one Meta service) is answered as a
// call of another version when its version differs. Every call
// carries the protocol version (metadata tessera-protocol, ProtocolVersion):
// the server refuses another version, and the client one whose server
// answers with another, each with "client speaks protocol N, server M".
// Calls made for a session carry its id (tessera-session). The caller's
// deadline travels with the call (grpc-timeout), so the server abandons
// work nobody waits for. Conversions between meta's types and the messages
// are written out (convert.go); every decoder checks hash lengths, enum
// values, integer ranges and the API's documented bounds, and a malformed
// message is meta.ErrInvalid.
//
// Errors. An API error travels as a gRPC status with a detail holding its
// errno and message, corruption, or a commit conflict with its current
// hashes. The client turns it back into an error that wraps the same
// syscall.Errno (errors.Is works as on the server), a *meta.ConflictError,
// or, for anything without an errno, an error wrapping meta.ErrIO with the
// server's message. A refused call (auth.ErrDenied on the server) comes
// back wrapping auth.ErrDenied and EACCES; an unauthenticated one wrapping
// auth.ErrUnauthenticated and EACCES.
//
// Authentication (gate.go). Without ServeOptions.Creds the port is plain
// TCP and every caller is auth.Insecure. With them it is TLS only: a caller
// is the identity of its verified client certificate, or of the bearer token
// in its "authorization" metadata (ServeOptions.Tokens); with neither the
// call fails Unauthenticated naming what was missing. The identity is put in
// the call's context (auth.NewContext) before the API runs; deciding what it
// may do is the API's business (an authorizing decorator). Every refused
// call is logged with its peer and why.
//
// Bounds (serve.go, limit.go). A request's length is checked against
// ServeOptions.MaxRecvMsg (16 MiB) before it is read. At most MaxConns
// connections (512) are served, MaxConnsPerPeer (64) from one IP address;
// more are closed at accept. A connection must finish its handshakes within
// HandshakeTimeout (10 s), is closed after IdleTimeout (5 min) without
// calls, and carries at most MaxStreams (256) concurrent calls; keepalive
// pings from clients more often than every 10 s close the connection.
// Per peer (one IP address, over all its connections; budget.go): at most
// MaxStreamsPerPeer (1024) calls are open, more are refused with
// ResourceExhausted naming the peer and the limit; and its calls hold at
// most MaxInFlightPerPeer (64 MiB) of requests: each read is charged
// the largest its message may be (MaxRecvMsg; a callback Ack's 1 KiB,
// enforced on its length prefix) until the message is in, then the
// message's size until the call ends, and a read that does not fit waits
// for one that does (until the call's deadline). A call parks at most one stream window (64 KiB) of
// data before its read is admitted, so one peer can make the server hold
// MaxInFlightPerPeer + MaxStreamsPerPeer x 64 KiB. A session's callback
// stream holds at most an Ack's worth, so sessions do not starve the calls
// of their address.
// A connection whose peer sends a request in tiny DATA frames (each costs
// the server a buffer of its own) is closed (pieces.go).
//
// Connections. A Client keeps one gRPC connection (HTTP/2 multiplexes its
// calls), dialled by Dial, which fails at once with one line naming the
// address when nothing answers there. A call that finds the connection down
// makes it reconnect at once and, when that works, is sent again: it never
// left this process. A call that was sent and lost its connection is not
// resent, since the server may have applied it. Every call is bounded by
// its context's deadline, or DefaultCallTimeout when it has none.
//
// Outages. A call that could not reach the server (no connection could be
// made, or it was down again when the call was resent) fails with an error
// wrapping meta.ErrUnreachable: it was not applied. A call that was sent
// and got no reply (its connection broke, or its time ran out) fails with
// one wrapping meta.ErrReplyLost: it may have been applied. "Sent" means
// its header was queued on a live connection (a stats handler marks it).
// Both unwrap to meta.ErrIO and name the server; calls on a closed Client
// fail with plain meta.ErrIO. The Client does not wait for the server
// itself: a mount wraps it in metawait, which waits out outages and sends
// calls again.
//
// Several meta processes (many.go). DialMany connects to every address of
// a cluster's meta processes and returns a Many: a meta.API calling the
// nearest (the lowest round trip of Hello, measured again every
// DefaultRefresh), which sends a call that could not reach it
// (meta.ErrUnreachable) to the next nearest at once and returns a lost
// reply (meta.ErrReplyLost) as it is. Hello (any caller) and ClusterStatus
// (admins) say what a process knows of its cluster (cluster.go,
// ServeOptions.Cluster).
//
// Sessions and callbacks (callbacks.go). WithSession returns a Client that
// shares the connection and sends the session id with every call; the
// server binds its API to that session (meta.SessionBinder) for the call.
// Callbacks keeps one stream per session: each poll sends an Ack (applied
// up to, how long to wait) and receives one batch, which the server sends
// as soon as a callback is pending. The session is renewed by each Ack, so
// it expires when its client stops polling (a stopped process), even while
// the connection stays open; meta.ErrSessionExpired ends the stream and
// reaches the poller. Without a deadline in its context a poll is bounded
// by the wait plus DefaultCallTimeout.
package metarpc
