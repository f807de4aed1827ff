// Package kvtest is the conformance suite that every kv.Store engine passes.
//
// An engine's test file supplies only a factory and calls Run (engines that
// keep nothing across Close, such as memkv) or RunDurable (engines whose
// committed writes must survive Close and reopen on the same directory):
//
//	func TestConformance(t *testing.T) {
//		kvtest.RunDurable(t, func(t *testing.T, dir string) kv.Store {
//			s, err := boltkv.Open(filepath.Join(dir, "meta.db"), boltkv.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The factory must return a store over dir and must not close it: the suite
// closes what it opens. RunDurable calls the factory more than once on the same
// dir, never with two stores open at once.
//
// The suite checks the contract in package kv's comment. Where that comment is
// silent it pins down one behaviour, so that code tested on memkv behaves the
// same on a durable engine:
//   - Put of an empty key fails (bbolt cannot store one); an empty value is a
//     present key whose value has length zero.
//   - Get of an absent key returns a nil value, false and no error.
//   - A Scan callback may Put and Delete. The scan goes on with the first key
//     after the current one in the transaction's state at that moment, so it
//     sees writes made ahead of it and never visits a key twice.
//   - Update and View with a context that is already done fail with an error
//     that wraps the context's error, and commit nothing.
//   - After Close, View and Update fail with an error that wraps kv.ErrClosed;
//     a second Close does not panic and returns nil or kv.ErrClosed.
//
// Updates must be serializable, not merely snapshot-isolated: the race cases
// (race.go) hold one Update open after its reads while another makes
// overlapping reads and writes (two increments of one key; write skew; a
// Create inserting under a prefix against an rmdir that scans the prefix
// empty and deletes the parent: a phantom), and the outcome must be one
// some serial order gives; a conflict (kv.ErrConflict) is an allowed end.
// race_test.go shows each case failing on an engine too weak for it.
//
// Stores that are a kv.Watcher or a kv.Elector also pass the cases of
// cluster.go (others skip them): a watch delivers each commit under its
// prefix once, in commit order, as one batch of net writes (a delete of an
// absent key is no change), and replays from a revision it gave out; an
// election has one leader at a time, a waiting candidate wins when the
// leader resigns, and one whose context ends gives up.
//
// Cases that use randomness log their seed; set TESSERA_KVTEST_SEED to replay
// one.
package kvtest
