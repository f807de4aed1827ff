// Package policy holds Tessera's consistency policies (DESIGN §4, after
// CAPFS's client-side plug-ins): a policy is a set of knobs plus hooks that
// the client calls before and after it serves open, read, write, fsync and
// close on a file.
//
// # Contract
//
// The package is a leaf: it imports neither meta, client nor fuse. The client
// hands the hooks a File, its view of one open handle, and an Op (the
// handle's open flags and the byte range); a hook acts only through File
// (Commit, Revalidate) and by returning an error, which the client returns to
// the caller instead of serving the operation (a Pre hook) or after serving
// it (a Post hook).
//
// What the client must do, and what the hooks may therefore leave out:
//   - commit on fsync and on close, whatever the policy (PreSync and PreClose
//     are no-ops in Base);
//   - run a timer per dirty handle under CommitPeriodic and commit when
//     Knobs.CommitEvery has passed since its first uncommitted write (hooks
//     run only when a request arrives, so they cannot keep time);
//   - honour Cache and CacheTTL in its attribute and recipe caches (expiring
//     entries after the TTL under CacheTimed, never under CacheForever), and
//     Conflict and Durability in File.Commit (DurabilityFor gives the
//     level a commit asks for).
//
// What the hooks do (Base, driven by the knobs):
//   - PreOpen revalidates under CacheNone and under CloseToOpen (session
//     semantics: every open sees the last close), and refuses O_TRUNC on a
//     committed WriteOnce file;
//   - PreRead revalidates under ReadSynchronized or when the handle was
//     opened O_RSYNC (rNFS §2.2 synchronized reads). On Linux O_RSYNC ==
//     O_SYNC, so every O_SYNC handle reads synchronized;
//   - PreWrite refuses a write to a committed WriteOnce file (ErrImmutable);
//   - Knobs.NearbyMeta (session, nfs, relaxed) lets the client mark the
//     read-only meta calls of a read as servable by a serializable read
//     (SerializableFor: never for O_RSYNC or synchronized reads);
//   - PostWrite commits under CommitEachWrite, on an O_SYNC or O_DSYNC
//     handle (rNFS synchronized writes), and under CommitPeriodic once
//     CommitWrites writes are dirty.
//
// A policy of one's own is a small type that embeds Base (made with NewBase)
// and overrides the hooks it changes; a preset is just Knobs and Base.
// Policies are immutable values, safe for concurrent use by every handle.
//
// The named presets (Lookup, Names, All) are posix, seq-nocache, forced,
// relaxed, session, nfs and immutable; Default ("session") is close-to-open,
// what the client did before policies existed.
package policy
