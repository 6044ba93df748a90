package sqlstore

import (
	"maps"
	"slices"
	"sync"

	"github.com/resourceapi/resourceapi"
)

// recordCache keeps recently read records by resource and id, so that reading
// one record by id, the most common request, costs no query. It is only
// correct when every write to the database goes through this Store (one
// process on a SQLite file); package postgres, where several instances share
// the database, does not enable it.
//
// A read that misses records the cache's generation before it queries, and
// stores its result only if no write has ended since: a write that commits
// while the read is in flight bumps the generation, so a stale row is never
// stored. Writes drop the entries they touch after they commit.
type recordCache struct {
	mu      sync.Mutex
	gen     uint64
	max     int
	entries map[cacheKey]resourceapi.Record
}

type cacheKey struct {
	res *resourceapi.Resource
	id  int64
}

func newRecordCache(max int) *recordCache {
	if max <= 0 {
		return nil
	}
	return &recordCache{max: max, entries: make(map[cacheKey]resourceapi.Record, max)}
}

// get returns a copy of the cached record, or nil and the generation to pass
// to put.
func (c *recordCache) get(res *resourceapi.Resource, id int64) (resourceapi.Record, uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.Lock()
	rec, gen := c.entries[cacheKey{res, id}], c.gen
	c.mu.Unlock()
	if rec == nil {
		return nil, gen
	}
	return clone(rec), gen
}

// put stores a copy of rec if no write has ended since gen was read.
func (c *recordCache) put(res *resourceapi.Resource, rec resourceapi.Record, gen uint64) {
	if c == nil || rec == nil {
		return
	}
	rec = clone(rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= c.max {
		for k := range c.entries { // evict an arbitrary entry: O(1), and good enough
			delete(c.entries, k)
			break
		}
	}
	c.entries[cacheKey{res, rec.ID()}] = rec
}

// invalidate drops record id of res after a write to it ended, whether or not
// it committed.
func (c *recordCache) invalidate(res *resourceapi.Resource, id int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	delete(c.entries, cacheKey{res, id})
	c.mu.Unlock()
}

// clone copies a record deeply enough that neither the cache nor its callers
// can change the other's copy.
func clone(rec resourceapi.Record) resourceapi.Record {
	out := maps.Clone(rec)
	for k, v := range out {
		if list, ok := v.([]string); ok {
			out[k] = slices.Clone(list)
		}
	}
	return out
}
