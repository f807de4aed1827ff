package meta

// LeaseStats is a snapshot of the service's sessions, for metrics and status.
type LeaseStats struct {
	Sessions int // live sessions (expired ones not yet swept included)
	Leases   int // leases the sessions hold, summed
	Opens    int // opens the sessions hold (HoldOpen), summed
	// Pending are callbacks queued and not yet acknowledged; Queued
	// counts every callback queued since the service started.
	Pending int
	Queued  uint64
}

// LeaseStats returns the sessions' counts as of now. It walks every
// session under the table's lock: O(sessions), for a scrape every few
// seconds, not for a hot path.
func (s *Service) LeaseStats() LeaseStats {
	l := s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	st := LeaseStats{Sessions: len(l.mu.sessions), Queued: l.mu.queued}
	for _, ss := range l.mu.sessions {
		st.Leases += len(ss.leases)
		st.Pending += len(ss.pending)
		for _, n := range ss.opens {
			st.Opens += n
		}
	}
	return st
}
