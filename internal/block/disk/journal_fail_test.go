package disk_test

import (
	"context"
	"errors"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
)

// TestJournalFailedPutMakesLeafDurable: once the journal has failed, a
// small Put makes its block durable by itself — its file, and the fan-out
// directories a journaled Put made without an fsync: the leaf's name in
// its parent and the parent's in blocks/ too, or a crash of the machine
// loses the acknowledged block with the leaf.
func TestJournalFailedPutMakesLeafDurable(t *testing.T) {
	s := open(t, t.TempDir())
	s.FailJournal(errors.New("journal fdatasync: injected failure"))
	data := blocktest.Data(1, 5000)
	h := block.Sum(data)
	if err := s.Put(context.Background(), h, data); err != nil {
		t.Fatalf("Put after the journal failed: %v", err)
	}
	if !s.LeafDurable(h) {
		t.Fatal("Put after the journal failed acknowledged a block in a leaf that is not durable in its parent")
	}
	mustGet(t, s, h, data)
}
