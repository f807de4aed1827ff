// Package kvlocal gives single-process engines (memkv, pebblekv, boltkv) the
// kv.Watcher and kv.Elector of a shared store, in memory, so that meta code
// can rely on a change feed and on elections whatever engine it runs on.
//
// Feed is the change feed. The engine calls Publish with the writes of each
// commit, in commit order, while it still holds its writer lock; Publish
// stamps them with the next revision (1, 2, ...; revisions restart with the
// process) and hands them to every watcher whose prefix matches. Delivery
// never blocks a commit: each watcher has its own queue. A watcher that
// falls more than MaxQueued commits behind is dropped (its channel closes
// and, as kv.Watcher says, it must resync). Watch with from > 0 replays the
// commits after from out of a bounded history (the last HistoryCommits
// commits, at most HistoryBytes of keys and values); when from is older
// than that, the channel closes at once: the caller resyncs.
//
// Elector is the elector of one process: one leader per election name at a
// time, the others wait in Campaign. A Leadership ends on Resign or when the
// engine closes (Close).
package kvlocal
