package etcdkv

// SetCommitHook makes fn see every commit Txn before it is sent: the keys
// each transaction it carries writes. fn may block (the committer then
// holds its Txn and later Updates gather). Set it before the store is used.
func SetCommitHook(s *Store, fn func(batch [][]string)) {
	s.hook = func(b []*prepared) {
		ws := make([][]string, len(b))
		for i, p := range b {
			ws[i] = p.writes
		}
		fn(ws)
	}
}

// QueueLen is how many Updates wait for a group commit.
func QueueLen(s *Store) int {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return len(s.gc.queue)
}

// Lagged is how many reads at a snapshot's revision a member refused
// because it had not applied the revision yet.
func Lagged(s *Store) int64 { return s.lagged.Load() }

// Resolved is how many commits lost in transport the store resolved
// (applied or not) by asking etcd.
func Resolved(s *Store) int64 { return s.resolved.Load() }
