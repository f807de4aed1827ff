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
// reads a range of a file from home (home.Store.ReadAt) and stores it
// through the client's normal write path, so the blocks are uploaded to
// the block servers placement chooses and committed; then it records in
// the inode's gateway section what it holds (meta.SetGateway, guarded by
// the inode's Change). A fetch of the whole file marks it cached. Once
// directories and files are cached they are served by the namespace and
// the block servers alone: home is not needed to list or read them again.
//
// Group is what a mount asks: each request goes to the gateway owning the
// inode (the first by Rendezvous hashing of the inode over the gateways'
// names, or the group's self in a gateway process); a fetch larger than
// Group.RangeSize is cut into whole-block ranges dealt round-robin to all
// gateways (FetchData), which read home in parallel, and the owner records
// the file cached once every range is in. Its members (Member) are local
// Ingesters or gateway processes reached over the network (gateway/gwrpc,
// where the separate gateway role lives: tessera gateway).
//
// Revalidate compares a fileset inode with home once the fileset's
// validity lag has passed since it was last validated (the Ingester's
// injected clock), by change token when home has one, else by mtime,
// ctime and size; only an object that changed is invalidated: a file
// drops its cached bytes and becomes a placeholder of home's new size, a
// directory is listed again (new names are added; names gone at home stay
// for now). RevalidateTree forces it for a subtree (tessera fileset
// revalidate). Single-writer filesets and locally made inodes are not
// revalidated.
//
// Not built yet (issue 14): ranged misses (a mount fetches a file whole on
// open), refusing local updates in ro filesets, removing names gone at
// home, and the fileset status counters (bytes cached, hit ratio, ingest
// rate per gateway of tessera up --gateways N: Stats holds the counts;
// gateway processes report theirs in their heartbeats).
// See docs/design/2026-11-24-gateway.md.
package gateway
