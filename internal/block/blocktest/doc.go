// Package blocktest is the conformance suite for block.Store implementations.
// A store's test supplies a factory and calls Run:
//
//	func TestConformance(t *testing.T) {
//		blocktest.Run(t, func(t *testing.T) block.Store { return openStore(t) })
//	}
//
// Each subtest gets a fresh, empty store from the factory, which should
// register its own cleanup with t.Cleanup. Stores that also implement
// block.Lister, or Ranger, get those capabilities tested too.
//
// The model-based subtest draws random operations from a seed it logs; set
// BLOCKTEST_SEED to replay one.
//
// MemStore (NewMem, mem.go) is an in-memory block.Store for tests of the layers
// above block servers (vfs, nfs, s3): it keeps every block in a map,
// checks hashes on Put, and counts Puts so a test can show that an
// operation stored no new bytes.
package blocktest
