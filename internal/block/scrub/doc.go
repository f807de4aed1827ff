// Package scrub is the background verification of a block server's store:
// round after round it lists every stored block and re-hashes its copy
// (block.Checker with quarantine), at most Config.Rate bytes per second, so
// that a copy rotting on disk is found before a reader needs it. A corrupt
// copy is moved aside by the store (kept, no longer listed) and logged; the
// mover of the meta role, which sees the block short of a copy at its next
// round, restores it from a good copy on another server. A block whose
// every copy rotted is then reported lost by `tessera status` and `tessera
// fsck`.
//
// Contract. A Scrubber only reads, except for moving corrupt copies aside
// through the store. Rounds start at least Config.Interval apart; within a
// round the verified bytes never run ahead of Rate × the time since the
// round began (the first block excepted), whatever the speed of the disk.
// Progress (the current or last round's blocks and bytes verified, corrupt
// copies found since start, rounds completed) is safe to read at any time;
// the block server serves it at GET /v1/scrub and `tessera status` prints
// it per server. Time goes through Config.Now and Config.Sleep, so tests
// drive it with a fake clock.
package scrub
