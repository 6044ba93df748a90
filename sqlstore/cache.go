package sqlstore

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// cache keeps recently read records, by resource and id, and list pages, by
// resource and query, so that repeated reads, the most common requests, cost
// no query. It is bounded by a number of entries and by an estimate of their
// bytes, and evicts the least recently used entry first.
//
// Coherence rests on three rules:
//
//   - A write drops what it changes before its commit becomes visible: inside
//     its transaction it drops the records it names, bumps the epochs of the
//     resources it changes and marks them in flight (begin), and once the
//     transaction has ended it bumps the epochs again and clears the mark
//     (end). An entry is valid only under the epochs it was stored under, so
//     invalidating a whole resource costs O(1) whatever the cache holds; the
//     invalid entries are removed when a lookup finds them, or evicted.
//   - A read that misses notes the epochs before it queries, and stores what
//     it read only if they have not moved and no write of the resource is in
//     flight: a read that may have seen the state before a commit never
//     stores it after the commit.
//   - Commits made without the Store (another process writing the database
//     file) are reported by Config.ForeignCommits, which every read consults
//     before it looks in the cache; a new one bumps the global epoch, which
//     invalidates every entry.
//
// So once any reader can see a commit, no reader is served the state before
// it. Package postgres, whose database several instances share, reports
// ok only while the instance is provably the only writer, and a new count
// each time it becomes so (postgres/solo.go).
type cache struct {
	// foreign is Config.ForeignCommits; foreignSeen the last count applied.
	foreign     func() (uint64, bool)
	maxEntries  int
	maxBytes    int64
	maxEntry    int64 // larger entries are not stored
	mu          sync.Mutex
	hits        uint64 // lookups answered, under mu
	misses      uint64 // and not
	foreignSeen uint64
	global      uint64 // the epoch of every entry
	resources   map[*resourceapi.Resource]*resourceEpochs
	// owners count the writes that change a record without changing
	// access (change.neutral): each begin and end moves owners on and
	// notes it in ownerLast of the record's bucket, and ownerInflight
	// counts those under way per bucket. A value derived from one record
	// (an account: entry.owner) is valid only while its bucket's ownerLast
	// is the one it was stored under, and stored only if no such write of
	// its bucket began since the read noted owners, nor is under way. So
	// a change of a user's age drops that user's account alone, where a
	// change of access drops every account (resourceEpochs.access).
	owners        uint64
	ownerLast     [ownerBuckets]uint64
	ownerInflight [ownerBuckets]int
	entries       map[cacheKey]*entry
	lru           entry // lru.next is the most recently used entry, lru.prev the least
	bytes         int64
}

// ownerBuckets is how many buckets the ids of records that values derive
// from are spread over (change.neutral): records of one bucket share their
// epoch, which costs a value of another record of the bucket a read again
// at worst.
const ownerBuckets = 1024

func ownerBucket(id int64) int { return int(uint64(id) % ownerBuckets) }

// resourceEpochs are the epochs of one resource's entries.
type resourceEpochs struct {
	// writes moves at the beginning and the end of every write that may
	// change a record of the resource; pages are valid under it, and every
	// read that misses must see it unchanged to store what it read.
	writes uint64
	// records moves at the beginning and the end of every write that may
	// change records of the resource without naming them (a cascade); records
	// are valid under it. A write names the records it changes, which are
	// dropped one by one.
	records uint64
	// inflight counts the writes of the resource that have begun and not
	// ended: while any is, no record or page read is stored.
	inflight int
	// access moves at the beginning and the end of every write of the
	// resource that may change what authenticates a caller (changesAccess:
	// not the creation of a user), and accessInflight counts those under
	// way; values (accounts) are valid under access and stored only while
	// none is in flight. So a flood of sign-ups leaves every caller's
	// account cached, where each would otherwise read it again.
	access         uint64
	accessInflight int
}

// cacheKey is a record's key (query empty) or a list page's (id 0).
type cacheKey struct {
	res   *resourceapi.Resource
	id    int64
	query string
}

type entry struct {
	key cacheKey
	rec resourceapi.Record
	// memo is what a transport derived from rec (its rendering): it
	// lives and dies with the entry, so whatever drops rec drops it too.
	memo resourceapi.Memo
	page resourceapi.Page
	val  any // a value derived from the resource's records (see value)
	// owner is the id of the record of the resource val derives from (an
	// account's user), 0 when none; ownerStamp the ownerLast of its bucket
	// when it was stored.
	owner, ownerStamp int64
	// dep, when not nil, are the epochs of a second resource val derives
	// from (an API key's, for the account it names: valueAlso), and
	// depEpoch the access epoch of dep it was stored under.
	dep      *resourceEpochs
	depEpoch uint64
	size     int64
	// global and epoch are the epochs the entry was stored under.
	global, epoch uint64
	prev, next    *entry
}

// Estimated sizes: what an entry costs besides its values, and what a field
// of a record costs besides its value's own bytes (a map slot, the interface
// and the boxed value). They err on the high side.
const (
	entryOverhead = 256
	fieldOverhead = 64
	recordHeader  = 64
	// A memo's value: its allocations and validators, and per field.
	memoOverhead      = 128
	memoFieldOverhead = 32
)

// EntryBytes is the byte budget the cache has per entry: a cache of n entries
// holds at most n*EntryBytes bytes of estimated size.
const EntryBytes = 2048

func newCache(maxEntries int) *cache {
	if maxEntries <= 0 {
		return nil
	}
	c := &cache{
		maxEntries: maxEntries,
		maxBytes:   int64(maxEntries) * EntryBytes,
		resources:  make(map[*resourceapi.Resource]*resourceEpochs),
		entries:    make(map[cacheKey]*entry),
	}
	c.maxEntry = c.maxBytes / 8
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// fill is what a read that missed needs to store what it read: the epochs
// before it queried. The zero fill stores nothing.
type fill struct {
	epochs                         *resourceEpochs
	writes, access, global, owners uint64
	// dep and depAccess are the second resource's epochs, and its access
	// epoch, for a value that derives from two (valueAlso).
	dep       *resourceEpochs
	depAccess uint64
}

// ok reports whether f lets the read store what it reads: the cache can
// tell now (ForeignCommits said ok) that no commit it does not see is made.
func (f fill) ok() bool { return f.epochs != nil }

// lookup returns the valid entry under k, or nil and the fill for what the
// read will find. Entries are shared and read-only. A value's key may come
// as query instead of k.query, bytes that are not made into a string to
// look it up. dep, when not nil, is a second resource a value derives from
// (valueAlso).
func (c *cache) lookup(k cacheKey, query []byte, dep *resourceapi.Resource) (*entry, fill) {
	if c == nil {
		return nil, fill{}
	}
	// Outside the lock: finding foreign commits may take a query.
	var foreign uint64
	if c.foreign != nil {
		var ok bool
		if foreign, ok = c.foreign(); !ok {
			return nil, fill{} // cannot tell now: the database answers, uncached
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if foreign > c.foreignSeen {
		c.foreignSeen = foreign
		c.global++
	}
	ep := c.epochs(k.res)
	f := fill{epochs: ep, writes: ep.writes, access: ep.access, global: c.global, owners: c.owners}
	if dep != nil {
		f.dep = c.epochs(dep)
		f.depAccess = f.dep.access
	}
	var e *entry
	if query != nil {
		e = c.entries[cacheKey{res: k.res, id: k.id, query: string(query)}]
	} else {
		e = c.entries[k]
	}
	if e == nil {
		c.misses++
		return nil, f
	}
	if e.global != c.global || e.epoch != ep.epochOf(e.key) ||
		e.owner != 0 && uint64(e.ownerStamp) != c.ownerLast[ownerBucket(e.owner)] ||
		e.dep != nil && e.dep.access != e.depEpoch {
		c.remove(e)
		c.misses++
		return nil, f
	}
	c.hits++
	c.unlink(e)
	c.pushFront(e)
	return e, f
}

// record returns the cached record id of res and its memo, or nil and the
// fill to pass to storeRecord.
func (c *cache) record(res *resourceapi.Resource, id int64) (resourceapi.Record, *resourceapi.Memo, fill) {
	e, f := c.lookup(cacheKey{res: res, id: id}, nil, nil)
	if e == nil {
		return nil, nil, f
	}
	return e.rec, &e.memo, f
}

// page returns the cached page of res for the query key, or false and the
// fill to pass to storePage.
func (c *cache) page(res *resourceapi.Resource, key string) (resourceapi.Page, bool, fill) {
	e, f := c.lookup(cacheKey{res: res, query: key}, nil, nil)
	if e == nil {
		return resourceapi.Page{}, false, f
	}
	return e.page, true, f
}

// value returns a cached value derived from records of res (an account),
// under key, or false and the fill to pass to storeValue. Values are valid
// under the resource's access epoch: any write of the resource that may
// change access (changesAccess: all but the creation of a user) drops them
// all, and so does a commit of another process. key is bytes, so that a
// hit makes no string of it.
func (c *cache) value(res *resourceapi.Resource, key []byte) (any, bool, fill) {
	return c.valueAlso(res, key, nil)
}

// valueAlso is value for a value derived from records of res and of dep
// too (the account an API key names: the user's record and the key's):
// valid under the access epochs of both, so that a write of either that
// may change access drops it, and stored (storeValue, with the fill
// valueAlso returned) only if neither moved since the lookup nor has such a
// write in flight. One entry then answers what two would.
func (c *cache) valueAlso(res *resourceapi.Resource, key []byte, dep *resourceapi.Resource) (any, bool, fill) {
	e, f := c.lookup(cacheKey{res: res}, key, dep)
	if e == nil {
		return nil, false, f
	}
	return e.val, true, f
}

// storeValue stores v, of the estimated size, under key, as f allows. Keys
// start with a zero byte, which no list key has (isValue). owner, when not
// 0, is the id of the record of res that v derives from (an account's
// user): a write that changes that record without changing access
// (change.neutral) drops v too. A fill from valueAlso makes v valid under
// its second resource's access epoch as well.
func (c *cache) storeValue(res *resourceapi.Resource, key string, f fill, v any, size int64, owner int64) {
	if c == nil || f.epochs == nil {
		return
	}
	c.store(&entry{key: cacheKey{res: res, query: key}, val: v, owner: owner, size: entryOverhead + int64(len(key)) + size}, f)
}

// storeRecord stores rec, which its readers share from now on, as f allows.
func (c *cache) storeRecord(res *resourceapi.Resource, f fill, rec resourceapi.Record) {
	if c == nil || f.epochs == nil || rec == nil {
		return
	}
	c.store(&entry{key: cacheKey{res: res, id: rec.ID()}, rec: rec, size: entryOverhead + recordSize(rec) + memoSize(rec)}, f)
}

// storePage stores page, which its readers share from now on, as f allows.
func (c *cache) storePage(res *resourceapi.Resource, key string, f fill, page resourceapi.Page) {
	if c == nil || f.epochs == nil {
		return
	}
	if len(page.Records) == 0 {
		page.Records = []resourceapi.Record{} // not the capacity of a full page
	}
	size := entryOverhead + int64(len(key)) + 8*int64(cap(page.Records))
	for _, rec := range page.Records {
		size += recordSize(rec)
	}
	c.store(&entry{key: cacheKey{res: res, query: key}, page: page, size: size}, f)
}

func (c *cache) store(e *entry, f fill) {
	if e.size > c.maxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ep := f.epochs
	if c.global != f.global {
		return // another process committed since the read queried
	}
	if isValue(e.key) {
		if ep.accessInflight > 0 || ep.access != f.access {
			return // a write that may change access began, or is under way
		}
		if e.owner != 0 {
			b := ownerBucket(e.owner)
			if c.ownerInflight[b] > 0 || c.ownerLast[b] > f.owners {
				return // a write of the record began, or is under way
			}
			e.ownerStamp = int64(c.ownerLast[b])
		}
		if d := f.dep; d != nil {
			if d.accessInflight > 0 || d.access != f.depAccess {
				return // a write of the second resource began, or is under way
			}
			e.dep, e.depEpoch = d, d.access
		}
	} else if ep.inflight > 0 || ep.writes != f.writes {
		return // a write began since the read queried, or is under way
	}
	e.global, e.epoch = c.global, ep.epochOf(e.key)
	if old := c.entries[e.key]; old != nil {
		c.remove(old)
	}
	c.entries[e.key] = e
	c.pushFront(e)
	c.bytes += e.size
	for len(c.entries) > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.lru.prev)
	}
}

// A change is what one write may change: a record it names, and whole
// resources whose records it may change without naming them (what the
// database deletes with a record).
type change struct {
	res   *resourceapi.Resource
	id    int64
	whole []*resourceapi.Resource
	// created is set for the insert of a new record, which changes nothing
	// an existing caller was authenticated by.
	created bool
	// neutral is set for an update that sets no field deciding access
	// (accessNeutral): it drops the values derived from the record it
	// names (its user's account) instead of every value of the resource.
	neutral bool
}

// begin starts invalidating what ch changes. It runs inside the write's
// transaction, before the commit can become visible; end must follow once
// the transaction has ended, committed or not.
func (c *cache) begin(ch change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[cacheKey{res: ch.res, id: ch.id}]; e != nil {
		c.remove(e)
	}
	c.bump(ch, 1)
}

// end finishes the invalidation begin started: a read that queried before the
// commit finds the epochs moved, and stores nothing.
func (c *cache) end(ch change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bump(ch, -1)
}

func (c *cache) bump(ch change, inflight int) {
	ep := c.epochs(ch.res)
	ep.writes++
	ep.inflight += inflight
	if changesAccess(ch) {
		ep.access++
		ep.accessInflight += inflight
	} else if ch.neutral {
		b := ownerBucket(ch.id)
		c.owners++
		c.ownerLast[b] = c.owners
		c.ownerInflight[b] += inflight
	}
	for _, res := range ch.whole {
		ep := c.epochs(res)
		ep.writes++
		ep.records++
		ep.inflight += inflight
		ep.access++ // records deleted without being named
		ep.accessInflight += inflight
	}
}

// isValue reports whether k is a value's (storeValue), whose keys start
// with a zero byte: a list key starts with the page's offset.
func isValue(k cacheKey) bool { return len(k.query) > 0 && k.query[0] == 0 }

// epochOf returns the epoch an entry under k is valid under: records under
// records, list pages under writes, values under access.
func (ep *resourceEpochs) epochOf(k cacheKey) uint64 {
	switch {
	case k.query == "":
		return ep.records
	case isValue(k):
		return ep.access
	}
	return ep.writes
}

func (c *cache) epochs(res *resourceapi.Resource) *resourceEpochs {
	ep := c.resources[res]
	if ep == nil {
		ep = &resourceEpochs{}
		c.resources[res] = ep
	}
	return ep
}

func (c *cache) pushFront(e *entry) {
	e.prev, e.next = &c.lru, c.lru.next
	e.prev.next, e.next.prev = e, e
}

func (c *cache) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *cache) remove(e *entry) {
	c.unlink(e)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// recordSize estimates the bytes rec holds.
func recordSize(rec resourceapi.Record) int64 {
	n := int64(recordHeader)
	for _, v := range rec {
		n += fieldOverhead
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []string:
			n += 24
			for _, s := range v {
				n += 16 + int64(len(s))
			}
		}
	}
	return n
}

// memoSize estimates the bytes of what a transport keeps in a record's memo:
// its rendering (the record's strings, and a name, punctuation and a value
// of each field) and its validators.
func memoSize(rec resourceapi.Record) int64 {
	n := int64(memoOverhead)
	for _, v := range rec {
		n += memoFieldOverhead
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []string:
			for _, s := range v {
				n += 4 + int64(len(s))
			}
		}
	}
	return n
}

// listKey identifies a list query: every field of it that changes the page.
func listKey(lq resourceapi.ListQuery) string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, int64(lq.Offset), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(lq.Limit), 10)
	b = append(b, '|')
	b = append(b, lq.Sort...)
	b = append(b, '|')
	b = strconv.AppendBool(b, lq.Desc)
	b = append(b, '|')
	b = strconv.AppendQuote(b, lq.Search)
	b = append(b, '|')
	b = strconv.AppendBool(b, lq.NoTotal)
	if c := lq.Cursor; c != nil {
		// The cursor's sort and direction are the query's (Check).
		b = append(b, "|@"...)
		b = strconv.AppendBool(b, c.Before)
		b = append(b, '/')
		b = strconv.AppendInt(b, c.ID, 10)
		b = append(b, '/')
		b = appendKeyValue(b, c.Value)
	}
	for _, fv := range lq.Filters {
		b = append(b, '|')
		b = append(b, fv.Filter.Param...) // "" for an internal filter:
		b = append(b, '/')
		b = append(b, fv.Filter.Field...) // the field tells it apart
		b = append(b, '=')
		b = appendKeyValue(b, fv.Value)
	}
	return string(b)
}

// appendKeyValue appends a value of a list query to its cache key.
func appendKeyValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return strconv.AppendQuote(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case bool:
		return strconv.AppendBool(b, v)
	case time.Time:
		return v.UTC().AppendFormat(b, time.RFC3339Nano)
	case nil:
		return append(b, "null"...)
	}
	return fmt.Appendf(b, "%T:%v", v, v)
}

// version implements Store.Version: the sum of the global epoch and the
// writes epochs of res, after the foreign commits are counted. Every epoch
// only ever grows, so the sum grows exactly when one of them does: one
// number for any set of resources.
func (c *cache) version(res []*resourceapi.Resource) (uint64, bool) {
	if c == nil {
		return 0, false
	}
	if c.foreign != nil {
		foreign, ok := c.foreign()
		if !ok {
			return 0, false
		}
		c.mu.Lock()
		if foreign > c.foreignSeen {
			c.foreignSeen = foreign
			c.global++
		}
	} else {
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	v := c.global
	for _, r := range res {
		ep := c.epochs(r)
		if ep.inflight > 0 {
			return 0, false
		}
		v += ep.writes
	}
	return v, true
}
