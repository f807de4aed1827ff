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
// the inode's Change: if the file changed since the fetch began, the
// record is not written and the fetch reports meta.ErrConflict). A fetch
// of the whole file marks it cached. Once directories and files are cached
// they are served by the namespace and the block servers alone: home is
// not needed to list or read them again.
//
// Not built yet (issue 14): the gateway role's process and registration,
// the owner-by-hash dispatch and parallel range split among gateways, the
// FUSE mount asking a gateway on a miss, revalidation after the validity
// lag, and the fileset status counters. See
// docs/design/2026-11-24-gateway.md.
package gateway
