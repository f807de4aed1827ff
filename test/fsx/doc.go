// Package fsx is a seeded, reproducible random-operation checker for a
// directory of a POSIX file system, in the spirit of fsx (Apple/LTP) and of
// the model-based tests in DESIGN.md §10.
//
// Run applies a random sequence of operations to a few files in a directory
// and to an in-memory model of them: positional writes anywhere (inside the
// file, across block boundaries, past EOF leaving holes), O_APPEND writes,
// truncate and ftruncate both ways, O_TRUNC opens, reads of random ranges
// through open descriptors and through fresh opens, fsync and fdatasync,
// close and reopen, rename (also over an existing name and between two links
// of one inode), link and unlink (an unlinked file stays usable through the
// descriptors that hold it), fallocate's PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE
// (with and without KEEP_SIZE). Every byte read is compared with the model, and
// sizes and link counts are checked after every change.
//
// The sequence depends only on the seed and the configuration, never on
// timing or on what the file system returns (a difference stops the run), so
// a failure is replayed exactly by running again with the same Seed and Ops.
// A failure is a *Failure carrying the seed, the index of the failing
// operation and a log of the operations before it.
package fsx
