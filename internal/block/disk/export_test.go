package disk

// SetWriteCache sets the bytes of recent writes s leaves in the page cache.
func SetWriteCache(s *Store, n int64) {
	s.recent.Lock()
	defer s.recent.Unlock()
	s.recent.max = n
}
