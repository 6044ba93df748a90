package sqlstore

// CacheStats reports what s's cache holds: its entries (valid or not yet
// removed), their estimated bytes, its bounds, and how many times foreign
// commits have invalidated every entry.
func CacheStats(s *Store) (entries int, bytes int64, maxEntries int, maxBytes int64, clears uint64) {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes, c.maxEntries, c.maxBytes, c.global
}
