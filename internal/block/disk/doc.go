// Package disk keeps blocks as files in a local directory. It implements
// block.Store and block.Lister and is what a block server (`tessera blockd`)
// serves.
//
// Layout. Under the store's directory:
//
//	blocks/ab/cd/abcd…(64 hex digits)   one file per block, named by its hash
//	tmp/put-*                           Puts in flight
//	journal                             small Puts' records (journal.go)
//	LOCK                                flock'd while a process has the store open
//	quarantine/<hash>.<unix ns>         corrupt copies moved aside (never deleted)
//
// Fan-out directories. The two fan-out levels (the first two bytes of the
// hash) keep directories small; they are created lazily, on the first Put
// that needs them, and fsync'd together with their parent, and removed
// again when their last block goes (Remove, quarantine), so that what the
// store takes on disk follows its live blocks: left in place, up to 65,792
// empty directories of 4 KiB each outweighed the blocks of a small store,
// and every listing walked them. Open removes empty ones (left by a crash
// or an older version). A Put holds its first-level directory's lock for
// reading from making sure of its leaf until the block is linked into it;
// pruning holds it for writing, so it never removes a leaf under a Put.
//
// OnDisk is what the store takes on its file system as du counts it
// (allocated blocks of the block files, fan-out directories and
// quarantined copies), counted at Open and kept up to date since.
//
// Durability. Put verifies the hash, writes the data to a fresh file in tmp/,
// fsyncs it, links it to its final name and fsyncs the fan-out directory
// before returning: a block that Put acknowledged survives a crash. Because a
// block is only ever linked into place whole, a reader never sees a partial
// block under its final name. Files left in tmp/ by a crash are removed by
// Open. Remove does not fsync the directory: a removal lost in a crash brings
// the block back, which is harmless (the garbage collector sweeps it again).
//
// A small block (at most 64 KiB: a patch of a small commit, a small file) is
// made durable by one fdatasync of the journal instead of two fsyncs and a
// directory's (issue 28): its file is written and linked without an fsync,
// and its content is appended to DIR/journal, whose fdatasync is shared by
// the Puts waiting on it. Crash argument: Put returns only after the record
// is durable; a record is valid only if its bytes hash to its name, so a
// torn one (never acknowledged) ends the replay; Open, before anything else
// uses the store, writes every valid record's block durably under its name
// unless its file holds it whole. The journal is never emptied before the
// files its records cover (and their fan-out directories) are fsync'd: it
// has two halves of 16 MiB; when one holds 4,096 records or is full, records
// go to the other and the full one is checkpointed in the background (its
// files fsync'd, then its header given a new generation: records of an
// older one are not valid) 40 s later, when the kernel has written the
// files back and the fsyncs cost little, or at once when the other half
// fills first. A Put of the same block meanwhile waits on its hash stripe,
// so it never acknowledges a file that is not yet durable. The journal
// takes at most 32 MiB, not counted in OnDisk.
//
// Page cache. A store leaves the pages of the blocks it wrote last in the
// page cache, DefaultWriteCache bytes of them unless SetWriteCache (blockd's
// --page-cache-window) says otherwise, so that a block read soon after its
// Put, by a reader at another site or the mover, comes from memory; it
// drops those of older ones (posix_fadvise DONTNEED; the pages are clean,
// the block durable; advice, so a file system that keeps them, such as
// tmpfs, loses nothing). Blocks are written once and read, if ever, mostly
// through their clients' caches; keeping them all grew the page cache at
// the write rate, so that every Put copied its block into memory the
// machine had not used lately: most of a block server's CPU per byte on
// the benchmark's virtual machine, whose host provides guest memory at
// first touch and takes free memory back (virtio-balloon free page
// reporting), a host page fault per 4 KiB page
// (bench/results/2026-11-27-write-cpu.md). With the window, a Put's pages
// come from memory just freed. Reads of older blocks fill the page cache
// as before, and the kernel reclaims it as before.
//
// A block's mtime is the time of its latest Put (or Touch), read from the
// process's clock when the file is installed or refreshed, never the kernel's
// coarser file time: removals compare it with cutoffs taken a moment apart
// (a block released by the meta service, then written again).
//
// Put of a block that is already present does not rewrite it: it checks that
// the stored file has the right size and sets its mtime to now, so the garbage
// collector's grace period counts from the latest Put. (If the size is wrong
// the stored copy is damaged and Put replaces it.) The mtime refresh is not
// fsync'd; a crash may lose it, which only matters if the writer also crashed
// before committing the recipe that refers to the block.
//
// Put and Remove of the same hash are serialised, so a Put that refreshes a
// block cannot race with the garbage collector removing it: either Remove sees
// the new mtime and keeps the block, or it removes it first and Put writes it
// again.
//
// Verification. Get and OpenBlock(verify=true) re-hash the file and report a
// mismatch as an error wrapping block.ErrCorrupt that names the file; the
// corrupt file is moved to quarantine/ (not deleted: an operator may want
// it), so the block is no longer listed and the mover restores it from a
// good copy. Check (block.Checker) re-hashes a file without sending it, and
// moves it aside only when asked to: fsck without --repair changes nothing,
// the scrub and fsck --repair quarantine. GetRange
// and OpenBlock(verify=false) cannot verify a part of a block: callers that
// need integrity fetch whole blocks.
//
// Path exposes the file name of a block so that a client on the same host
// may read it directly (and must verify it, like any reader).
package disk
