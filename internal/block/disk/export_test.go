package disk

import (
	"time"

	"tessera/internal/block"
)

// SetJournalRecs lowers the records a journal half takes, and checkpoints
// a full half at once.
func (s *Store) SetJournalRecs(n int) {
	s.jn.mu.Lock()
	s.jn.maxRecs = n
	s.jn.delay = 0
	s.jn.mu.Unlock()
}

// SetCheckpointDelay sets how long a full half waits for its checkpoint.
func (s *Store) SetCheckpointDelay(d time.Duration) {
	s.jn.mu.Lock()
	s.jn.delay = d
	s.jn.mu.Unlock()
}

// SetBeforeJournalSync runs fn once a journal record is written, before
// its fdatasync.
func (s *Store) SetBeforeJournalSync(fn func()) {
	s.jn.mu.Lock()
	s.jn.beforeSync = fn
	s.jn.mu.Unlock()
}

// JournalHalf is the half of the journal records go to.
func (s *Store) JournalHalf() int {
	s.jn.mu.Lock()
	defer s.jn.mu.Unlock()
	return s.jn.cur
}

const JournalMax = journalMax

// WaitCheckpoint returns once no checkpoint runs.
func (s *Store) WaitCheckpoint() {
	s.jn.mu.Lock()
	defer s.jn.mu.Unlock()
	for s.jn.ckpt {
		s.jn.cond.Wait()
	}
}

// FailJournal makes the journal fail as after an fdatasync error: Puts
// then make their blocks durable themselves.
func (s *Store) FailJournal(err error) {
	s.jn.mu.Lock()
	s.jn.failed = err
	s.jn.mu.Unlock()
}

// LeafDurable reports whether the fan-out leaf of h is known durable in
// its parent, and its parent in blocks/.
func (s *Store) LeafDurable(h block.Hash) bool { return s.fan.leaves[leafIndex(h)].durable.Load() }
