package sqlstore

import (
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

var users = resourceapi.Users

func mustListKey(t *testing.T, params url.Values) string {
	t.Helper()
	lq, err := rhttp.ParseListQuery(users, params)
	if err != nil {
		t.Fatal(err)
	}
	return listKey(lq)
}

func userRecord(id int64, name string) resourceapi.Record {
	return resourceapi.Record{"id": id, "name": name}
}

// mustMiss fails unless the cache has no valid record id of res, and
// returns the fill for a read of it.
func mustMiss(t *testing.T, c *cache, res *resourceapi.Resource, id int64, what string) fill {
	t.Helper()
	rec, _, f := c.record(res, id)
	if rec != nil {
		t.Fatalf("%s: record %d cached (%v), want a miss", what, id, rec)
	}
	return f
}

func mustHit(t *testing.T, c *cache, res *resourceapi.Resource, id int64, what string) {
	t.Helper()
	if rec, _, _ := c.record(res, id); rec == nil {
		t.Fatalf("%s: record %d not cached, want a hit", what, id)
	}
}

// TestCacheRefusesFillsThatStraddleAWrite is the race the epochs and the
// in-flight marks guard against: a read misses and queries, a write to what
// it read commits, and only then does the read try to store what it read.
func TestCacheRefusesFillsThatStraddleAWrite(t *testing.T) {
	c := newCache(16)
	ch := change{res: users, id: 7}

	before := mustMiss(t, c, users, 7, "empty cache")
	c.begin(ch)
	c.storeRecord(users, before, userRecord(7, "old"))
	mustMiss(t, c, users, 7, "a fill from before the write, stored while it is in flight")

	during := mustMiss(t, c, users, 7, "write in flight")
	c.storeRecord(users, during, userRecord(7, "old or new"))
	mustMiss(t, c, users, 7, "a fill stored while the write is in flight")
	c.end(ch)
	c.storeRecord(users, during, userRecord(7, "old or new"))
	mustMiss(t, c, users, 7, "a fill that began while the write was in flight, stored after it ended")
	c.storeRecord(users, before, userRecord(7, "old"))
	mustMiss(t, c, users, 7, "a fill from before the write, stored after it ended")

	after := mustMiss(t, c, users, 7, "after the write")
	c.storeRecord(users, after, userRecord(7, "new"))
	mustHit(t, c, users, 7, "a fill that began after the write ended")

	key := mustListKey(t, url.Values{})
	_, _, before = c.page(users, key)
	c.begin(ch)
	c.end(ch)
	c.storePage(users, key, before, resourceapi.Page{Total: 1})
	if _, ok, _ := c.page(users, key); ok {
		t.Fatal("a page read before a write was stored after it")
	}
}

// TestCacheWriteInvalidates checks what a write invalidates: the record it
// names and every page of its resource, and nothing else.
func TestCacheWriteInvalidates(t *testing.T) {
	c := newCache(64)
	for id := int64(1); id <= 3; id++ {
		_, _, f := c.record(users, id)
		c.storeRecord(users, f, userRecord(id, "x"))
	}
	var keys []string
	for _, page := range []string{"1", "2"} {
		key := mustListKey(t, url.Values{"page": {page}})
		keys = append(keys, key)
		_, _, f := c.page(users, key)
		c.storePage(users, key, f, resourceapi.Page{Total: 30})
		if _, ok, _ := c.page(users, key); !ok {
			t.Fatalf("page %s not cached", page)
		}
	}
	ch := change{res: users, id: 2}
	c.begin(ch)
	mustMiss(t, c, users, 2, "the written record, inside the write")
	for i, key := range keys {
		if _, ok, _ := c.page(users, key); ok {
			t.Fatalf("page %d cached inside a write to its resource", i+1)
		}
	}
	c.end(ch)
	mustHit(t, c, users, 1, "another record")
	mustHit(t, c, users, 3, "another record")
}

// TestCacheWholeResource checks that a write that changes a resource without
// naming its records (a cascade) invalidates all of it, in O(1): the entries
// stay until a lookup finds them invalid.
func TestCacheWholeResource(t *testing.T) {
	c := newCache(64)
	posts := resourceapi.NewResource(resourceapi.Resource{Name: "posts", Singular: "post", Fields: users.Fields})
	for _, res := range []*resourceapi.Resource{users, posts} {
		for id := int64(1); id <= 3; id++ {
			_, _, f := c.record(res, id)
			c.storeRecord(res, f, userRecord(id, res.Name))
		}
		key := mustListKey(t, url.Values{})
		_, _, f := c.page(res, key)
		c.storePage(res, key, f, resourceapi.Page{Total: 3})
	}
	ch := change{res: users, id: 1, whole: []*resourceapi.Resource{posts}}
	c.begin(ch)
	c.end(ch)
	if got, want := len(c.entries), 8-1; got != want {
		t.Fatalf("%d entries after the write, want %d: it walked the cache", got, want)
	}
	for id := int64(1); id <= 3; id++ {
		mustMiss(t, c, posts, id, "a record of the cascaded resource")
	}
	if _, ok, _ := c.page(posts, mustListKey(t, url.Values{})); ok {
		t.Fatal("a page of the cascaded resource is still cached")
	}
	mustHit(t, c, users, 2, "a record of the written resource the write did not name")
	mustMiss(t, c, users, 1, "the named record")
}

// TestCacheForeignCommits checks that a commit reported by ForeignCommits
// invalidates every entry, and that a read the check cannot vouch for
// neither hits nor stores.
func TestCacheForeignCommits(t *testing.T) {
	var count atomic.Uint64
	var ok atomic.Bool
	ok.Store(true)
	c := newCache(64)
	c.foreign = func() (uint64, bool) { return count.Load(), ok.Load() }
	_, _, f := c.record(users, 1)
	c.storeRecord(users, f, userRecord(1, "x"))
	mustHit(t, c, users, 1, "before a foreign commit")

	_, _, before := c.record(users, 2)
	count.Add(1)
	mustMiss(t, c, users, 1, "after a foreign commit")
	c.storeRecord(users, before, userRecord(2, "old"))
	mustMiss(t, c, users, 2, "a fill from before a foreign commit")

	_, _, f = c.record(users, 1)
	c.storeRecord(users, f, userRecord(1, "y"))
	mustHit(t, c, users, 1, "a fill after a foreign commit")

	ok.Store(false)
	mustMiss(t, c, users, 1, "when foreign commits cannot be checked")
	if _, _, f := c.record(users, 3); f.epochs != nil {
		t.Fatal("a read foreign commits cannot vouch for may store what it reads")
	}
}

// TestCacheBounds checks the bounds on entries and bytes, that the least
// recently used entry goes first, and that an entry larger than an eighth of
// the budget is not stored.
func TestCacheBounds(t *testing.T) {
	c := newCache(10)
	for id := int64(1); id <= 10; id++ {
		_, _, f := c.record(users, id)
		c.storeRecord(users, f, userRecord(id, "x"))
	}
	mustHit(t, c, users, 1, "the first record, just used") // now the most recent
	_, _, f := c.record(users, 11)
	c.storeRecord(users, f, userRecord(11, "x"))
	if len(c.entries) != 10 {
		t.Fatalf("%d entries, want the bound 10", len(c.entries))
	}
	mustMiss(t, c, users, 2, "the least recently used record")
	mustHit(t, c, users, 1, "a recently used record")

	// Records of a quarter of the byte budget each: the bytes bound.
	big := strings.Repeat("x", int(c.maxBytes/4))
	_, _, f = c.record(users, 20)
	c.storeRecord(users, f, userRecord(20, big[:len(big)/2]))
	mustMiss(t, c, users, 20, "a record larger than an eighth of the budget")
	for id := int64(21); id <= 30; id++ {
		_, _, f := c.record(users, id)
		// Its string counts twice: in the record and in its memo.
		empty := userRecord(id, "")
		c.storeRecord(users, f, userRecord(id, big[:(c.maxEntry-entryOverhead-recordSize(empty)-memoSize(empty))/2]))
		if c.bytes > c.maxBytes || len(c.entries) > c.maxEntries {
			t.Fatalf("after record %d: %d entries of %d bytes, want at most %d and %d", id, len(c.entries), c.bytes, c.maxEntries, c.maxBytes)
		}
	}
	mustHit(t, c, users, 30, "the last record, exactly an eighth of the budget")

	// A page larger than an eighth of the budget.
	recs := make([]resourceapi.Record, 0, 100)
	for id := range int64(100) {
		recs = append(recs, userRecord(id, big[:len(big)/64]))
	}
	key := mustListKey(t, url.Values{"limit": {"100"}})
	_, _, f = c.page(users, key)
	c.storePage(users, key, f, resourceapi.Page{Records: recs, Total: 100})
	if _, ok, _ := c.page(users, key); ok {
		t.Fatal("a page larger than an eighth of the budget was stored")
	}

	var sum int64
	for _, e := range c.entries {
		sum += e.size
	}
	if sum != c.bytes {
		t.Fatalf("bytes = %d, but the entries add up to %d", c.bytes, sum)
	}
}

// TestCacheEmptyPageCosts checks that an empty page costs its overhead, not
// nothing, and not the capacity of a full page.
func TestCacheEmptyPageCosts(t *testing.T) {
	c := newCache(100)
	for i := range 1000 {
		key := mustListKey(t, url.Values{"q": {fmt.Sprint("nothing", i)}})
		_, _, f := c.page(users, key)
		c.storePage(users, key, f, resourceapi.Page{Records: make([]resourceapi.Record, 0, 20)})
	}
	if len(c.entries) != 100 {
		t.Fatalf("%d empty pages cached, want the bound 100", len(c.entries))
	}
	if min := int64(100 * entryOverhead); c.bytes < min {
		t.Fatalf("100 empty pages cost %d bytes, want at least %d", c.bytes, min)
	}
	for _, e := range c.entries {
		if cap(e.page.Records) != 0 {
			t.Fatalf("an empty page keeps a capacity of %d records", cap(e.page.Records))
		}
	}
}

func TestListKeyDistinguishesQueries(t *testing.T) {
	queries := []url.Values{
		{}, {"page": {"2"}}, {"limit": {"50"}}, {"sort": {"name"}}, {"sort": {"name"}, "order": {"desc"}},
		{"q": {"ab"}}, {"q": {`a|b`}}, {"q": {`a"`}}, {"role": {"admin"}}, {"status": {"all"}},
		{"q": {"admin"}}, {"role": {"user"}},
	}
	seen := map[string]url.Values{}
	for _, q := range queries {
		key := mustListKey(t, q)
		if prev, dup := seen[key]; dup {
			t.Fatalf("queries %v and %v share the key %q", prev, q, key)
		}
		seen[key] = q
	}
}

// TestCacheBoundedUnder200kQueries stores the pages of 200,000 distinct
// searches that match nothing, as List does, in a cache of the default size:
// such pages once grew the server from 41 to 296 MB, and each write then
// walked them all. The cache stays within its bounds on entries and bytes,
// and a write invalidates them without visiting any.
func TestCacheBoundedUnder200kQueries(t *testing.T) {
	const queries = 200_000
	c := newCache(16384)
	for i := range queries {
		key := mustListKey(t, url.Values{"q": {fmt.Sprint("no match ", i)}})
		page, ok, f := c.page(users, key)
		if ok {
			t.Fatalf("query %d cached before it was stored: %v", i, page)
		}
		c.storePage(users, key, f, resourceapi.Page{Records: make([]resourceapi.Record, 0, 20)})
		if len(c.entries) > c.maxEntries || c.bytes > c.maxBytes {
			t.Fatalf("after %d queries: %d entries of %d bytes, want at most %d and %d", i+1, len(c.entries), c.bytes, c.maxEntries, c.maxBytes)
		}
	}
	if len(c.entries) != c.maxEntries {
		t.Fatalf("%d entries, want the bound %d", len(c.entries), c.maxEntries)
	}
	t.Logf("%d empty pages cached, estimated at %d bytes (bound %d)", len(c.entries), c.bytes, c.maxBytes)

	last := mustListKey(t, url.Values{"q": {fmt.Sprint("no match ", queries-1)}})
	if _, ok, _ := c.page(users, last); !ok {
		t.Fatal("the last page stored is not cached")
	}
	ch := change{res: users, id: 1}
	c.begin(ch)
	c.end(ch)
	if len(c.entries) != c.maxEntries {
		t.Fatalf("a write changed the cache to %d entries: it visited them", len(c.entries))
	}
	if _, ok, _ := c.page(users, last); ok {
		t.Fatal("a page was served after a write to its resource")
	}
}

// TestCacheAccountsOutliveOtherUsersChanges: an update that changes no
// field deciding access (a user's age) drops the account of the user it
// names, and refuses a read of that account that straddles it, but leaves
// every other account cached: under a load of such updates each request
// used to read its caller's account again (an extra transaction per PATCH
// on PostgreSQL while solo). An update that may change access still drops
// them all.
func TestCacheAccountsOutliveOtherUsersChanges(t *testing.T) {
	c := newCache(64)
	key := func(id int64) string { return fmt.Sprintf("\x00account id %d", id) }
	store := func(id int64, f fill) {
		c.storeValue(users, key(id), f, resourceapi.Account{User: userRecord(id, "old")}, 64, id)
	}
	cached := func(id int64) bool {
		_, ok, _ := c.value(users, []byte(key(id)))
		return ok
	}
	for _, id := range []int64{7, 8, 7 + ownerBuckets} {
		_, _, f := c.value(users, []byte(key(id)))
		store(id, f)
		if !cached(id) {
			t.Fatalf("account %d not cached", id)
		}
	}
	_, _, before := c.value(users, []byte(key(7)))
	age := change{res: users, id: 7, neutral: accessNeutral(users, resourceapi.Record{"age": int64(40)})}
	if !age.neutral {
		t.Fatal("a change of the age decides access")
	}
	c.begin(age)
	if cached(7) {
		t.Error("the account of the user being changed is still served while the write is in flight")
	}
	if !cached(8) {
		t.Error("another user's account was dropped by a change of user 7's age")
	}
	_, _, during := c.value(users, []byte(key(7)))
	store(7, before)
	store(7, during)
	if cached(7) {
		t.Error("a read of the account from before or during the write was stored while it is in flight")
	}
	c.end(age)
	store(7, before)
	store(7, during)
	if cached(7) {
		t.Error("a read of the account from before or during the write was stored after it ended")
	}
	if cached(7 + ownerBuckets) {
		t.Error("an account of the same bucket outlived the write (buckets share their epoch)")
	}
	if !cached(8) {
		t.Error("another user's account was dropped after the write ended")
	}
	_, _, after := c.value(users, []byte(key(7)))
	store(7, after)
	if !cached(7) {
		t.Error("a read of the account after the write was not stored")
	}

	for _, patch := range []resourceapi.Record{{"email": "x@example.com"}, {"roles": []string{"admin"}}, {"deleted": true},
		{"permissions": []string{}}, {"security_stamp": "X"}, {"service": true}, {"age": int64(3), "password": "secret123"}} {
		if accessNeutral(users, patch) {
			t.Errorf("an update of %v counts as leaving access as it was", patch)
		}
	}
	c.begin(change{res: users, id: 7, neutral: accessNeutral(users, resourceapi.Record{"roles": []string{"admin"}})})
	if cached(8) {
		t.Error("a change of roles left other accounts cached")
	}
}

// TestCacheMemoLivesWithItsRecord: a record's memo comes with every hit of
// the same entry, and whatever drops the record (a write that names it, a
// write of its resource as a whole, another process's commit) drops the memo
// with it, so that what a transport derived from the record (its rendering)
// is never served beside, or instead of, a newer record.
func TestCacheMemoLivesWithItsRecord(t *testing.T) {
	var foreign atomic.Uint64
	c := newCache(16)
	c.foreign = func() (uint64, bool) { return foreign.Load(), true }
	view := new(int) // what derived the memo's value
	load := func(id int64) (resourceapi.Record, *resourceapi.Memo) {
		t.Helper()
		rec, memo, _ := c.record(users, id)
		if rec != nil && memo == nil {
			t.Fatalf("record %d: a hit without its memo", id)
		}
		return rec, memo
	}
	fillMemo := func(id int64, name string) {
		t.Helper()
		c.storeRecord(users, mustMiss(t, c, users, id, "before "+name), userRecord(id, name))
		rec, memo := load(id)
		if rec == nil {
			t.Fatalf("%s: not cached", name)
		}
		if v := memo.Load(view); v != nil {
			t.Fatalf("%s: a new entry's memo holds %v", name, v)
		}
		memo.Store(view, name)
		if _, again := load(id); again.Load(view) != name {
			t.Fatalf("%s: the next hit's memo holds %v, want %q", name, again.Load(view), name)
		}
		if memo.Load(new(int)) != nil {
			t.Fatalf("%s: the memo answers another key", name)
		}
	}

	fillMemo(7, "v1")
	c.begin(change{res: users, id: 7})
	c.end(change{res: users, id: 7})
	fillMemo(7, "v2") // fails if the write left v1's memo

	fillMemo(8, "w1")
	c.begin(change{res: resourceapi.Posts, id: 1, whole: []*resourceapi.Resource{users}})
	c.end(change{res: resourceapi.Posts, id: 1, whole: []*resourceapi.Resource{users}})
	fillMemo(8, "w2")

	fillMemo(9, "x1")
	foreign.Add(1)
	fillMemo(9, "x2")

	var none *resourceapi.Memo
	none.Store(view, "ignored")
	if none.Load(view) != nil {
		t.Fatal("the nil memo kept a value")
	}
}

// TestCacheValueAlso: a value derived from two resources (the account an
// API key names: the user's record and the key's) is dropped by a write of
// either that may change access, and a read of it is not stored while a
// write of either is in flight, or once one began after the read looked.
func TestCacheValueAlso(t *testing.T) {
	c := newCache(64)
	keys := resourceapi.APIKeys
	key := []byte("\x00key account 1")
	store := func(f fill) {
		c.storeValue(users, string(key), f, resourceapi.Account{User: userRecord(7, "u")}, 64, 7)
	}
	cached := func() bool {
		_, ok, _ := c.valueAlso(users, key, keys)
		return ok
	}
	fresh := func() {
		t.Helper()
		_, _, f := c.valueAlso(users, key, keys)
		store(f)
		if !cached() {
			t.Fatal("the value was not stored")
		}
	}
	for _, w := range []struct {
		name string
		ch   change
	}{
		{"a write of the key's resource", change{res: keys, id: 1}},
		{"a change of access of the user", change{res: users, id: 7}},
		{"an update of the user that leaves access", change{res: users, id: 7, neutral: true}},
	} {
		fresh()
		_, _, before := c.valueAlso(users, key, keys)
		c.begin(w.ch)
		if cached() {
			t.Errorf("%s: the value is served while it is in flight", w.name)
		}
		_, _, during := c.valueAlso(users, key, keys)
		store(before)
		store(during)
		if cached() {
			t.Errorf("%s: a read from before or during it was stored while it is in flight", w.name)
		}
		c.end(w.ch)
		store(before)
		store(during)
		if cached() {
			t.Errorf("%s: a read from before or during it was stored after it ended", w.name)
		}
	}
	fresh()
	c.begin(change{res: users, id: 8, created: true})
	c.end(change{res: users, id: 8, created: true})
	if !cached() {
		t.Error("a sign-up dropped the value")
	}
}
