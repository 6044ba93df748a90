package sqlstore

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestCacheRejectsStalePut is the race the generation guards against: a read
// misses, a write to the record commits and invalidates, and only then does
// the read try to store what it read before the write.
func TestCacheRejectsStalePut(t *testing.T) {
	c := newRecordCache(16)
	users := resourceapi.Users
	_, gen := c.get(users, 7)
	c.invalidate(users, 7)
	c.put(users, resourceapi.Record{"id": int64(7), "name": "stale"}, gen)
	if got, _ := c.get(users, 7); got != nil {
		t.Fatalf("get after a stale put = %v, want nil", got)
	}

	lq, err := resourceapi.ParseListQuery(users, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, gen = c.getPage(users, listKey(lq))
	c.invalidate(users, 0)
	c.putPage(users, listKey(lq), resourceapi.Page{Total: 1}, gen)
	if _, ok, _ := c.getPage(users, listKey(lq)); ok {
		t.Fatal("getPage after a stale putPage found the page")
	}
}

// TestCacheInvalidatesPagesOfResource checks that a write drops every cached
// page of its resource.
func TestCacheInvalidatesPagesOfResource(t *testing.T) {
	c := newRecordCache(64)
	users := resourceapi.Users
	for _, page := range []string{"1", "2"} {
		lq, err := resourceapi.ParseListQuery(users, url.Values{"page": {page}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, gen := c.getPage(users, listKey(lq))
		c.putPage(users, listKey(lq), resourceapi.Page{Total: 30}, gen)
		if _, ok, _ := c.getPage(users, listKey(lq)); !ok {
			t.Fatalf("page %s not cached", page)
		}
	}
	c.invalidate(users, 0)
	if n := len(c.pages); n != 0 {
		t.Fatalf("%d pages cached after a write, want 0", n)
	}
}

// TestCacheBoundsPageRecords checks that cached pages never hold more records
// than the budget, however many pages are stored.
func TestCacheBoundsPageRecords(t *testing.T) {
	c := newRecordCache(10) // a budget of 40 records
	users := resourceapi.Users
	recs := make([]resourceapi.Record, 15)
	for i := range 20 {
		_, _, gen := c.getPage(users, fmt.Sprint(i))
		c.putPage(users, fmt.Sprint(i), resourceapi.Page{Records: recs}, gen)
		if c.pageRecords > c.maxPageRecords {
			t.Fatalf("after %d puts, %d records cached, want at most %d", i+1, c.pageRecords, c.maxPageRecords)
		}
	}
	n := 0
	for _, p := range c.pages {
		n += len(p.Records)
	}
	if n != c.pageRecords {
		t.Fatalf("pageRecords = %d, but pages hold %d", c.pageRecords, n)
	}
}
