// Package server is the HTTP face of a block store: the handler that
// `tessera blockd` serves. It exposes a Backend (a block.Store that is also a
// block.Lister, in practice a disk.Store) and adds no state of its own but
// the bounds on what its peers may make it hold (see Bounds below).
//
// Protocol (HTTP/1.1; {hex} is a block name, 64 lower-case hex digits):
//
//	PUT    /v1/blocks/{hex}   body = the block. 201 stored, 204 already present
//	                          (its age is refreshed). 400 bad name or short
//	                          body, 413 larger than the maximum block size,
//	                          422 body does not hash to {hex}, 503 busy (the
//	                          in-flight budget, see Bounds), 507 out of space.
//	                          The reply is sent once the block is durable.
//	GET    /v1/blocks/{hex}   200 with the block. Without a Range header the
//	                          server verifies the block against its hash before
//	                          sending it; a corrupt block is a 500 with header
//	                          Tessera-Error: corrupt and a body naming the file.
//	                          With a Range header (206) the bytes are sent
//	                          unverified: a part of a block cannot be checked.
//	                          ETag is the quoted block name; the body is sent
//	                          with sendfile where the backend has files (on
//	                          TLS, where sendfile cannot go, a whole block is
//	                          read once, hashed in memory and sent in one
//	                          corked Write: package tlsconn).
//	HEAD   /v1/blocks/{hex}   200 with Content-Length, or 404.
//	DELETE /v1/blocks/{hex}?older-than=<unix ns>
//	                          block.Lister.Remove: 200 with {"removed":bool}.
//	                          older-than is required.
//	POST   /v1/remove         DELETE for many blocks in one request (the
//	                          reclaimer's): body = 40-byte records, hash (32
//	                          bytes) then older-than (int64 unix ns, big
//	                          endian), at most MaxRemoveBatch; reply = one
//	                          byte per record, 1 if removed, else 0 (absent,
//	                          or written or touched at or after its
//	                          older-than). Each record has its own cutoff
//	                          (block.Removal). 413 more records, 400 a body
//	                          that is not whole records. A store error fails
//	                          the request; removals made before it stand
//	                          (each is conditional and idempotent).
//	POST   /v1/has            body = concatenated 32-byte hashes (at most
//	                          MaxHasBatch); reply = one byte per hash, 1 if
//	                          the block is held, else 0. With ?touch=1 the
//	                          held ones are also marked as just written
//	                          (block.Toucher; 501 if the backend cannot).
//	GET    /v1/list           every block as a 48-byte record: hash (32 bytes),
//	                          size (uint64), mtime (int64 unix ns), both big
//	                          endian; streamed. The HTTP trailer
//	                          Tessera-List-Count carries the number of records
//	                          when the listing is complete; otherwise
//	                          Tessera-List-Error says what failed. A reader
//	                          must treat a reply without the count as failed.
//	GET    /v1/usage          {"blocks":n,"bytes":n,"free":n,"size":n}: what
//	                          the store holds, and the free and total bytes
//	                          of its file system (absent when the backend
//	                          cannot say: block.Spacer).
//	GET    /v1/space          {"on_disk":n,"free":n,"size":n,"fs":"…"}
//	                          (block.Space): what the store takes on disk
//	                          as du counts it (absent when the backend
//	                          cannot say), the free and total bytes of its
//	                          file system and that file system's name
//	                          (equal for stores sharing one), so that a
//	                          mount's df counts each file system once.
//	                          501 when the backend knows none of it.
//	POST   /v1/check/{hex}[?quarantine=1]
//	                          re-hash the stored copy where it lies
//	                          (block.Checker; 501 if the backend cannot):
//	                          {"state":"good"|"corrupt"|"missing","detail":…}.
//	                          Without quarantine=1 nothing changes on disk;
//	                          with it a corrupt copy is moved aside.
//	GET    /v1/scrub          the background scrub's progress (scrub.Progress
//	                          as JSON), 404 when the server runs none.
//
// Authorization. A server given Options.Creds serves TLS 1.3 only
// (Listener) and every route requires an identity: a client certificate of
// the cluster CA, verified by the handshake (one of another CA, or expired,
// fails the handshake), or "Authorization: Bearer TOKEN" with a token the
// CA signed (auth.CAVerifier). Without one the reply is 401 (class
// unauthenticated); an identity whose role lacks the route's permission
// gets 403 (class denied). Routes and permissions (Routes, the one table
// the mux is built from):
//
//	PUT    /v1/blocks/{hex}   WriteBlocks   (meta, client-rw, admin)
//	GET    /v1/blocks/{hex}   ReadBlocks    (meta, client-rw, client-ro, admin)
//	HEAD   /v1/blocks/{hex}   ReadBlocks
//	DELETE /v1/blocks/{hex}   ManageBlocks  (meta, admin)
//	POST   /v1/remove         ManageBlocks
//	POST   /v1/has            ReadBlocks; with ?touch=1 also WriteBlocks
//	GET    /v1/list           ManageBlocks
//	GET    /v1/space          ReadBlocks
//	GET    /v1/usage          ManageBlocks
//	POST   /v1/check/{hex}    ManageBlocks
//	GET    /v1/scrub          ManageBlocks
//
// Removing, listing, checking and the store's totals are the meta
// service's (mover, reclaimer, collector) and the admin commands' (gc,
// fsck, status); mounts read and write. Every refusal is logged with the
// caller (who), its address (peer) and the reason (why), at most one line
// per Options.RefusalLogEvery, the others counted. A server without
// credentials (--insecure) serves plain HTTP and treats every caller as
// auth.Insecure.
//
// Errors have plain-text bodies that say what was wrong, and a
// Tessera-Error header naming their class (not-found, corrupt,
// hash-mismatch, no-space, too-large, bad-request, busy, unauthenticated,
// denied, internal) so that
// a client can tell a missing block from a missing route.
//
// Bounds (Limits; defaults in DefaultLimits, the caps settable with
// --max-conns, --max-conns-per-ip, --max-inflight and --max-inflight-per-ip
// on `tessera blockd` and `tessera up`). A peer is an IP address.
//
//   - Connections: at most 1024 open, 256 per peer (LimitListener); one
//     more gets "503 busy" and is closed before its request is read. On a
//     TLS port that reply precedes the handshake, so the peer sees a
//     failed handshake.
//   - Headers: read within 10 s, at most 64 KiB; a kept-alive connection
//     idle for 2 minutes is closed.
//   - Bodies: a PUT declaring more than the maximum block size is a 413
//     before its body is read, as is a /v1/has or /v1/remove declaring
//     more than its batch limit. A PUT, /v1/has or /v1/remove reserves
//     its declared length (a chunked one: the maximum) from an in-flight
//     budget of 256 MiB in all and 128 MiB per peer before its buffer is
//     allocated; one that does not fit waits, holding no buffer, up to a
//     minute, then gets "503 busy" with Retry-After. A body must not go
//     15 s without a byte nor arrive slower than 1 MiB/s on average after
//     a 30 s head start; otherwise the request ends with 400 and its bytes
//     are given back. Every error reply to a request with a body closes
//     the connection: what is left of the body is not read.
//   - Replies: a minute from when the reply starts (block bodies: their
//     length at 1 MiB/s plus 30 s; listings: a minute per write).
//   - Memory: receive buffers are pooled (64 MiB per size class, 128 MiB
//     in all). A whole-block GET on TLS holds the block in such a buffer
//     while it is sent; it takes it from the in-flight budget only if it
//     fits at once, and is otherwise streamed from the file. Once the bytes in flight fall to zero after a peak of at
//     least 64 MiB and stay there 5 s, the pool is emptied and free memory
//     returned to the system (debug.FreeOSMemory).
//
// Refusals for the caps and the budget are logged through package ratelog:
// one line per 5 s, with the number held back.
//
// Put reuses its receive buffers: the Backend's Put must not keep the data
// slice after it returns (disk.Store copies it to a file).
//
// Logging goes to the *slog.Logger in Options: server errors (5xx) and every
// corrupt block, with the block and its file.
package server
