package sqlstore

import (
	"fmt"
	"strings"
	"sync"

	"github.com/resourceapi/resourceapi"
)

// recordCache keeps recently read records by resource and id, and recently
// read list pages by resource and query, so that repeated reads, the most
// common requests, cost no query. It is only
// correct when every write to the database goes through this Store (one
// process on a SQLite file); package postgres, where several instances share
// the database, does not enable it.
//
// A read that misses records the cache's generation before it queries, and
// stores its result only if no write has ended since: a write that commits
// while the read is in flight bumps the generation, so a stale row is never
// stored. Writes drop the record they touch, and every cached page of its
// resource, after they commit.
type recordCache struct {
	mu      sync.Mutex
	gen     uint64
	max     int
	entries map[cacheKey]resourceapi.Record
	// maxPageRecords bounds the records held in cached pages, whatever
	// their size; pageRecords counts them.
	maxPageRecords int
	pageRecords    int
	pages          map[pageKey]resourceapi.Page
}

type pageKey struct {
	res   *resourceapi.Resource
	query string
}

// listKey identifies a list query: every field of it that changes the page.
func listKey(lq resourceapi.ListQuery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%d|%s|%t|%q", lq.Offset, lq.Limit, lq.Sort, lq.Desc, lq.Search)
	for _, fv := range lq.Filters {
		fmt.Fprintf(&b, "|%s=%q", fv.Filter.Param, fv.Value)
	}
	return b.String()
}

type cacheKey struct {
	res *resourceapi.Resource
	id  int64
}

func newRecordCache(max int) *recordCache {
	if max <= 0 {
		return nil
	}
	return &recordCache{
		max: max, entries: make(map[cacheKey]resourceapi.Record, max),
		maxPageRecords: 4 * max, pages: make(map[pageKey]resourceapi.Page),
	}
}

// get returns the cached record, shared and read-only (see resourceapi.Store),
// or nil and the generation to pass to put.
func (c *recordCache) get(res *resourceapi.Resource, id int64) (resourceapi.Record, uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.Lock()
	rec, gen := c.entries[cacheKey{res, id}], c.gen
	c.mu.Unlock()
	return rec, gen
}

// put stores rec, which its readers share from now on, if no write has ended
// since gen was read.
func (c *recordCache) put(res *resourceapi.Resource, rec resourceapi.Record, gen uint64) {
	if c == nil || rec == nil {
		return
	}
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

// getPage returns the cached page for lq, its records shared and read-only,
// or false and the generation to pass to putPage.
func (c *recordCache) getPage(res *resourceapi.Resource, key string) (resourceapi.Page, bool, uint64) {
	if c == nil {
		return resourceapi.Page{}, false, 0
	}
	c.mu.Lock()
	page, ok := c.pages[pageKey{res, key}]
	gen := c.gen
	c.mu.Unlock()
	return page, ok, gen
}

// putPage stores page, which its readers share from now on, if no write has
// ended since gen was read.
func (c *recordCache) putPage(res *resourceapi.Resource, key string, page resourceapi.Page, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	k := pageKey{res, key}
	c.dropPage(k)
	for k := range c.pages { // evict arbitrary pages until the new one fits
		if c.pageRecords+len(page.Records) <= c.maxPageRecords {
			break
		}
		c.dropPage(k)
	}
	c.pages[k] = page
	c.pageRecords += len(page.Records)
}

func (c *recordCache) dropPage(k pageKey) {
	if old, ok := c.pages[k]; ok {
		c.pageRecords -= len(old.Records)
		delete(c.pages, k)
	}
}

// invalidate drops record id of res (0: none) and every page of res after a
// write to it ended, whether or not it committed.
func (c *recordCache) invalidate(res *resourceapi.Resource, id int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, cacheKey{res, id})
	for k := range c.pages {
		if k.res == res {
			c.dropPage(k)
		}
	}
}
