// Package client is Tessera's data path on the client side: it turns reads and
// writes at byte offsets of a file into block fetches and block uploads, and
// commits recipes to the meta service. The FUSE layer (internal/fuse) and
// tools use it; namespace operations go to meta.API directly.
//
// Write path. Writes land in a per-file buffer of dirty blocks. A block whose
// last byte is written is hashed and uploaded at once, in the background, to
// the block servers placement allows for its hash (R of its R+1 candidates,
// the least loaded by this client), while the application keeps writing.
// Commit (on fsync, flush/close and truncate) waits for the uploads and sends
// the meta service one commit naming, for every changed block, the hash it
// was based on and the new hash (DESIGN §2.3). A block that is all zeros
// becomes a hole; a file of at most meta.InlineMax bytes is committed inline
// and never reaches a block server. Dirty memory is bounded for the whole
// client (Config.DirtyBytes): a writer that would exceed it waits, and the
// client uploads dirty blocks of open files to make room, so memory does not
// grow with the size or number of files written.
//
// Read path. A read is served from the file's own dirty buffers, then by
// block hash from the memory cache, the local disk cache and the block
// servers (copies on this host first, then the block's R+1 placement
// candidates, then the others). Every block fetched from outside the process
// is verified against its hash; a corrupt copy is an error (EIO to the
// application) and a log line naming the block and the server, never wrong
// bytes. Sequential reads trigger read-ahead of the next blocks, deeper with
// more servers and bounded by the memory cache. Caches are keyed by hash, so
// they never need invalidation.
//
// Locking. Client.mu guards the table of open files; file.mu guards one file's
// state. Order: Client.mu before file.mu, never the reverse. No file.mu is held
// while waiting for the dirty-memory budget, so the flusher can take any.
package client
