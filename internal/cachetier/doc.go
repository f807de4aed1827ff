// Package cachetier is Tessera's shared cache tier (DESIGN.md §7, after
// IMCa): a pool of memcached servers that clients consult for blocks before
// the block servers, and for attributes before the metadata service.
//
// Contract. The tier is an optimisation, never a source of truth and never
// a source of errors. Everything read from it is verified: a block against
// its BLAKE3 name (block.Sum), an attribute value against the inode, change
// counter and CRC-32C stored with it. A missing, evicted, torn, truncated or
// mismatching item is a miss — the caller goes to the real store — never
// wrong bytes. A server that fails (cannot be dialled, times out, breaks the
// connection, answers garbage) is marked down for a back-off period
// (Options.BackoffMin, doubling per failed probe up to Options.BackoffMax);
// while down it is skipped without any network traffic (a miss), and after
// the period one operation probes it. Every operation is bounded by the
// memcache client's deadlines (200 ms to connect, 500 ms per operation plus
// the payload at 32 MiB/s by default), so a dead or hung server costs hits
// and at most one such deadline per probe, never an error.
//
// No invalidation. Blocks are immutable and named by their content, so a
// cached block is valid forever. Attributes are cached under the inode AND
// its change counter (meta.Attr.Change, bumped by every change; inode
// numbers are never reused): a change makes a new key, and the old entry is
// simply never asked for again and ages out of memcached's LRU. Callers
// must know the change counter they want (from a lease, a recipe, …).
// For stats, which want the newest attributes without asking the metadata
// service, items keyed by the inode alone (GetInode) and by directory and
// name (GetEntry) carry whatever the caller encodes — the client puts the
// time the attributes were asked in it and trusts them only within the
// file's attribute TTL (docs/design/2026-11-23-stat-tier.md); these items
// are overwritten by newer ones and expire with that TTL.
//
// Key schema (all items of a block live on one server):
//
//	tb:<64 hex>            block header: "TCB1", size u64, chunk size u32,
//	                       chunk count u32 (big-endian); when the count is 0
//	                       the block's bytes follow inline (blocks up to
//	                       Options.ChunkSize: one item, one round trip)
//	tb:<64 hex>:<i>        chunk i (decimal, from 0) of a larger block: bytes
//	                       [i*chunk, min((i+1)*chunk, size)); a 4 MiB block
//	                       with the default 512 KiB chunks is 8 chunk items
//	                       plus the 20-byte header
//	ta:[<ns>:]<ino>:<chg>  attribute value: "TCA1", ino u64, change u64,
//	                       CRC-32C(payload) u32, payload (opaque, ≤ 32 KiB);
//	                       <ns> is Options.Namespace, for pools shared by
//	                       several file systems
//	ti:[<ns>:]<ino>        newest attributes of an inode (same frame; the
//	                       change is the value's, not the key's)
//	te:[<ns>:]<dir>:<h>    what name resolves to in directory dir; h is the
//	                       FNV-1a 64 of the name (hex), the frame's payload
//	                       starts with the name (u16 length, bytes)
//
// A fill writes the chunks (pipelined) before the header, so a reader that
// finds a header normally finds its chunks; if not (eviction, a racing fill,
// a dead server), the hash check turns it into a miss. Blocks go up to
// MaxBlockSize (64 MiB). Each memcached's item size limit (-I, 1 MiB by
// default) must exceed ChunkSize plus about 300 bytes of key and item
// overhead.
//
// Server choice: rendezvous (highest-random-weight) hashing of the first 8
// bytes of the block hash (FNV-1a of the key for attributes) against each
// server's address. IMCa uses CRC32 modulo the number of servers; we do not,
// because modulo placement depends on the order and count of the servers in
// the URL: two clients that list the same servers in a different order would
// disagree on every key, and adding or removing one server would move almost
// all keys. Rendezvous moves only the removed server's 1/N share and is
// order-independent; its cost (N cheap 64-bit mixes per lookup) is nothing
// next to a round trip. A server that is down is skipped, not replaced: its
// keys miss rather than migrate, so no other server is flooded and nothing
// needs to move back when it returns. Clients must spell a server the same
// way (the address string is the hash seed).
//
// Layers. Pool holds the servers and speaks the key schema; BlockCache is a
// block.Store decorator (Get: tier, then next, then an asynchronous fill
// through a bounded queue that drops when full; Put and Has pass through).
// Sub-package memcache is the wire client; memcache/mctest starts real
// memcached servers for tests. The package imports block, not meta: callers
// encode attributes themselves.
package cachetier
