// Package tlsconn carries the block data path's TLS over TCP with the
// system calls and wake-ups of plain TCP rather than crypto/tls's own.
//
// crypto/tls writes every record (at most 16 KiB of plaintext) with its own
// write(2) on the connection beneath it, and reads at most about one record
// per read(2). A 4 MiB block sent in one Write thus took 256 writes, each a
// separate segment and a wake-up of the reader on loopback, where plain
// TCP took one write (bench/results/2026-11-24-tls-2.md). And the reader
// cannot use SO_RCVLOWAT (package lowat) on a *tls.Conn: it hides the
// socket, and the plaintext it still holds.
//
// Contract. Conn goes beneath a *tls.Conn (Server, Listener, Dialer), so
// the TLS handshake, the certificates checked and the identity the peer
// proves are crypto/tls's, unchanged; Conn only changes how the records'
// bytes reach the socket:
//
//   - Writes: between Cork and the uncork it returns, what crypto/tls
//     writes is gathered in a buffer and written in pieces of FlushSize;
//     the uncork writes the rest. Outside a cork every Write goes straight
//     to the socket, so the handshake and small replies are not delayed.
//     A gathered write that fails fails every later Write and closes the
//     connection: the peer sees a cut stream, never a hole in it.
//   - Reads: crypto/tls gets at most MaxRecord bytes per read; the Conn
//     first takes what the socket has queued, up to ReadAhead bytes,
//     without waiting (not one read(2) per record), and only a read that
//     must wait reads into the caller's bytes: no buffer is held across a
//     wait, so idle connections hold none. crypto/tls and the Conn thus
//     never hold more than Held bytes of plaintext that the reader has not
//     taken; Raw returns the socket and that bound, for lowat.ReadFull to
//     set its low-water mark below what is still to come.
//
// Config turns off crypto/tls's dynamic record sizing (small records for
// the first 128 KiB of a connection, for web pages' latency), which only
// adds records and system calls to block transfers.
package tlsconn
