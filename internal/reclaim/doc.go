// Package reclaim removes blocks soon after the last recipe entry naming
// them goes (issue 10): the prompt half of block collection, run by the meta
// role. The full walk (admin.GC: `tessera gc`, the hourly background run)
// stays as the safety net for what this misses.
//
// The meta service keeps a reference count per block and logs a release
// when one reaches 0, in the transaction of the change that dropped the last
// entry (see "Reference counts" in package meta). A Reclaimer reads the
// releases older than its safety window (Config.After) and, for each whose
// block still has no reference, asks every block server of the map to
// remove the block if its latest Put is older than the release: the
// conditional removal of block.Lister.Remove with the release time as
// cutoff. The release goes from the log once every server has answered. A
// block named again since its release has a count again: its release is
// dropped and nothing is removed.
//
// Batches. Releases are read a page (256) at a time, and each server is
// asked once per page, for all of the page's releases it has to answer
// for (block.BatchRemover; over HTTP one POST /v1/remove instead of a
// DELETE /v1/blocks/HASH?older-than=T per block), at most
// Config.Concurrency servers at once: a page costs about one round trip
// to the farthest server, not one per block. Every record of a batch
// carries its own release's time as its cutoff (block.Removal): one cutoff
// for the page would take copies written or touched after their own
// release but before a later one's. A server's answer is one bit per
// record; a failed batch leaves every release of it waiting for that
// server (the removals the server made before failing stand: each is
// conditional, and asked again, harmless).
//
// Why the copies it removes are dead. After the release, a recipe names the
// block again only through a commit, and a client commits only blocks it
// uploaded (a Put, which sets the copy's time to now) or, for uploads older
// than a second, touched just before the commit (client.DefaultTouchAfter,
// block.Toucher): either marks the copies after the release, so the
// conditional remove spares them, whether it runs before or after the
// commit. Copies written by the mover after the release are spared too (and
// left to the full walk). The window covers readers holding a recipe read
// before the release (a `relaxed` mount trusts its cache for a minute) and
// keeps the removal away from the commit it raced with.
//
// What it cannot see: an upload made before the release (its content was
// also a block some other file dropped) that its client commits more than
// the window later, without the touch reaching the copies first. The
// client's touch before the commit then finds the block gone and fails the
// commit with EIO instead of naming a missing block (as with the full
// walk's grace, only sooner). The cutoff compares the meta service's clock
// with the block servers' file times: their clocks must agree to well
// within the time between a release and a re-upload of the same content.
//
// Servers that are down or do not answer keep the release: it is retried
// for them alone, with a backoff, until Config.GiveUpAfter, after which the
// full walk finds their copies. A server that fails as unavailable is not
// asked again in the same round (the later pages leave its removals
// waiting). A server's failures are logged once per
// outage. One reclaimer runs per store (the meta role's); two would only do
// the same removals twice.
//
// Contract. A Reclaimer reaches the meta service only through Meta and the
// block servers only through Dial; it removes nothing a recipe names when
// it reads the release, and nothing written or touched after the release.
// Round is one pass (tests call it with an injected clock); Run loops.
package reclaim
