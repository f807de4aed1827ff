// Package memcache is a small client for memcached's text protocol: get
// (several keys at once), set (one item or a pipelined batch), delete,
// version and flush_all, over TCP to one server.
//
// Contract. Every call is bounded: it runs under a deadline of
// Options.OpTimeout plus the time its payload takes at Options.MinRate
// (extended as a get reply announces each value's size), or ctx's deadline
// if that is earlier; waiting for a connection slot and dialling (at most
// Options.DialTimeout) count against the same deadline. A cancelled ctx ends
// the call at once with ctx's error. A reply the parser does not accept —
// a malformed line, a line longer than 4 KiB, a value larger than
// Options.MaxValue, a key that was not asked for — is ErrProtocol; the
// parser never panics and never reads more than the reply announces.
//
// Errors. Transport failures, timeouts and malformed replies are *ConnError
// (the server is unreachable or misbehaving; the connection is discarded).
// Error lines from a live server map to ErrServer, ErrClient, ErrTooLarge
// and ErrNotStored. Invalid keys and oversized values are refused before
// anything is sent (ErrBadKey, ErrTooLarge).
//
// Connections. A Client keeps up to Options.MaxIdle idle connections and
// opens at most Options.MaxConns at once; a connection goes back to the
// idle list only after a call that left it in a known state.
package memcache
