// Package metarpc carries meta.API over TCP: Serve exposes any meta.API,
// and the Client returned by Dial implements meta.API against it.
//
// Protocol. net/rpc with its gob codec, service name "Meta", one RPC method
// per API method with the same name (WalkBlocks travels as pages of
// ListBlocks). Every call sends an Args envelope and receives a Reply
// envelope; gob transmits only the fields a call sets. Args.Timeout carries
// the caller's remaining deadline, so the server abandons work nobody waits
// for. An error travels inside the Reply as a WireError: an errno and the
// server's message, or a commit conflict with its current hashes. The client
// turns it back into an error that wraps the same syscall.Errno (errors.Is
// works as on the server), a *meta.ConflictError, or, for anything without
// an errno, an error wrapping meta.ErrIO with the server's message.
//
// Connections. A Client keeps PoolSize TCP connections, used round-robin so
// that concurrent requests do not queue behind one gob stream. Each is dialled
// lazily with DialTimeout and redialled on the call after it broke. A call
// that finds its connection already shut down (the server restarted while it
// sat idle) is resent once on a fresh one: it never left this process. A call
// that was sent and lost its connection is not resent, since the server may
// have applied it. Every call is bounded by its context's deadline, or
// DefaultCallTimeout when it has none; a call that times out closes its
// connection, since a server that does not answer is presumed stuck.
//
// Outages. A call that could not reach the server (no connection could be
// made, or it broke again before the resent call left) fails with an error
// wrapping meta.ErrUnreachable: it was not applied. A call that was sent and
// got no reply (its connection broke, or its time ran out) fails with one
// wrapping meta.ErrReplyLost: it may have been applied. Both unwrap to
// meta.ErrIO and name the server; calls on a closed Client fail with plain
// meta.ErrIO. The Client does not wait for the server itself: a mount wraps
// it in metawait, which waits out outages and sends calls again, and the
// next call after the server came back on its address reconnects.
//
// Sessions. WithSession returns a Client that shares the connections and
// sends the session id in Args.Session; the server binds its API to that
// session (meta.SessionBinder) for the call. Callbacks, the long poll, runs on
// a connection of its own outside the pool, so that a poll that waits or
// times out (closing its connection) never holds up or breaks other calls;
// without a deadline in its context it is bounded by the wait plus
// DefaultCallTimeout.
package metarpc
