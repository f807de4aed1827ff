// Package gateway is the caching gateway of filesets (issue 14, Panache
// §4-§5): the part of the gateway role that reads from a fileset's home
// store and records what it read in the namespace. The write-back of
// local updates to home lives in gateway/writeback.
//
// Contract. An Ingester works for one cluster: with its meta client (which
// must implement meta.FilesetAPI) and its data-path client (package
// client). ListDir lists a fileset directory at home and adds what it
// found as placeholder entries (meta.IngestDir: a name the directory has
// already is left alone, so a local create wins over home's); it lists in
// batches of meta.MaxIngestEntries and marks the directory cached with
// the last one, so a listing cut short is finished by the next. Fetch
// reads whole blocks of a file from home (home.Store.ReadAt, in ranges of
// Options.Chunk bytes with up to Options.InFlight of them in flight: the
// window of window.go; the windows of all its fetches together hold at
// most Options.MaxBuffered, however many callers and pieces) and stores them, in order of offset while the next
// ranges are read, through the client's normal write path, so the blocks
// are uploaded to the block servers placement chooses and committed; as
// they are committed it adds them to the cached runs of the inode's
// gateway section (meta.SetGateway, guarded by the inode's Change, and
// refused if home's object changed since the fetch began). The first
// error stops the window: the blocks stored before it stay recorded, none
// after it is. Once every block is in, the file is cached.
// Cached directories and files are served by the namespace and the block
// servers alone: home is not needed to list or read them again.
//
// Group is what a mount asks: each request goes to the gateway owning the
// inode (the first by Rendezvous hashing of the inode over the gateways'
// names, or the group's self in a gateway process; a remote owner is
// handed the whole request). Group.Fetch fetches the blocks a reader
// needs that are not cached, cut into pieces of at most Group.RangeSize
// and into at least one per gateway when it holds that many blocks, each
// dealt to the gateway with the fewest pieces in flight (deal.go;
// FetchData), which read home in parallel; the owner records each piece,
// and the reader waits for those blocks only. A block being fetched is
// fetched once: readers that miss it meanwhile wait for that fetch
// (flight.go; Regroup keeps this across a change of the live gateways).
// While the reader waits, the fileset's prefetch setting starts in the
// background on the owner, shared the same way: none, read-ahead
// (range: the Group.Window per gateway after the read, and the next window as soon
// as the reader misses inside the last one: readahead.go), or the rest
// of the file (whole). A file read at more
// scattered places than its section can record (meta.MaxCachedRanges
// runs) is fetched whole. Its members (Member) are local Ingesters or
// gateway processes reached over the network (gateway/gwrpc, where the
// separate gateway role lives: tessera gateway).
//
// Revalidate compares a fileset inode with home once the fileset's
// validity lag has passed since it was last validated (the Ingester's
// injected clock), by change token when home has one, else by mtime,
// ctime and size; only an object that changed is invalidated: a file
// drops its cached bytes and becomes a placeholder of home's new size, a
// directory is listed again (new names are added) and the names home no
// longer has leave the cache: all of them in a read-only fileset, else
// only the clean ones (no queued write-back, not made or changed locally:
// meta.VanishAPI checks in the removal's transaction). RevalidateTree
// forces it for a subtree (tessera fileset revalidate). Single-writer filesets and locally made inodes are not
// revalidated.
//
// EvictTree and CachedBytes walk a fileset for the operator commands
// (tessera fileset evict, status): the first gives the cached data of the
// files back (meta.EvictAPI) and reports those with local changes, kept;
// the second sums what the cache holds, with a bound on the walk.
//
// Group and the gwrpc Router also pass a mount's read counts of a fileset
// (hits served from the cache, misses that needed a fetch) to the meta
// service (meta.FilesetReadsAPI), for the hit ratio of fileset status.
//
// Group.Fileset (and the gwrpc Router's) read a fileset's settings for a
// mount, which refuses updates in a read-only fileset with EROFS before it
// fetches anything (the meta service refuses them too, in the change's
// transaction: docs/design/2026-11-25-gateway-readonly.md).
// Stats holds each gateway's counts: gateway processes send theirs with
// their heartbeats, and tessera up --gateways N heartbeats those of its
// in-process gateways (meta.GatewayInProcess) for fileset status.
// See docs/design/2026-11-24-gateway.md,
// docs/design/2026-11-25-gateway-ranges.md,
// docs/design/2026-11-25-ingest-window.md,
// docs/design/2026-11-25-gateway-split.md and
// docs/design/2026-11-25-gateway-readonly.md.
package gateway
