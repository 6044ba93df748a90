package inmem

// Sweep runs one pass of the sweeper, for tests that cannot wait for its
// ticker.
func (l *RateLimiter) Sweep() { l.sweep() }
