// Package kvbench measures the kv engines on the two metadata operations that
// dominate small-file work, as the meta service will issue them:
//
//   - create: one Update that reads a dentry key (it must be absent), reads
//     and increments the inode-number counter, and writes a ~120-byte inode
//     and a ~40-byte dentry;
//   - stat: one View that reads a dentry, then the inode it names.
//
// Each runs with 1 and with 8 goroutines. The benchmarks live in the package's
// test file and print ops/s; they do not pass or fail. Run them with
//
//	go test ./internal/kv/kvbench -run '^$' -bench 'Fsync|Engines' -benchtime 1s
//
// The durable engines write under -kvbench.dir (default: a new directory in
// /var/tmp), which must be on the disk being measured, not a tmpfs.
// The figures and the engine choice they led to are in
// docs/design/2026-11-22-kv-engine.md.
package kvbench
