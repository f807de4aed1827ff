package disk

// SetJournalRecs lowers the records a journal generation takes.
func (s *Store) SetJournalRecs(n int) {
	s.jn.mu.Lock()
	s.jn.maxRecs = n
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
