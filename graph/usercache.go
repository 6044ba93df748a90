package graph

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/resourceapi/resourceapi"
)

// usersCache keeps the responses of queries that read users (with their
// posts and the posts' authors): decisions §6's users cache. An entry is
// served only while the store's generation of every declared resource
// (Service.Version) is the one it was computed under, so any write of
// any record, whether made through GraphQL, REST, the command line
// (another process on the SQLite file) or anything else the store sees,
// drops every entry at once, before the write's commit can be read; and
// never for longer than its lifetime (60 s). A store that cannot tell its
// version without a query (PostgreSQL, which several instances share) gets
// no cache: reads there always ask the database, so a client never reads
// its own write stale, whichever instance serves it.
//
// A hit answers without a resolver, so without the confirmation of a
// provisional caller (Service.Authenticate): that is sound because an
// account is provisional only when it comes from a cache that another
// process's commit may have made stale, and such a commit (SQLite's
// data_version) moves the version every entry is kept under, so no entry
// computed before it is served after it; a change made in this process
// drops the cached account itself.
//
// An entry is the whole response, keyed by the document, the operation, the
// variables and who asks (their user id and effective permissions, which
// decide what the rule layer lets them see): a hit costs no resolver, no
// query and no marshalling.
type usersCache struct {
	service  *resourceapi.Service
	ttl      time.Duration
	maxBytes int
	now      func() time.Time

	mu           sync.Mutex
	hits, misses uint64 // lookups, under mu
	items        map[[32]byte]*list.Element
	lru          list.List // front: most recently used
	bytes        int
}

type usersEntry struct {
	key     [32]byte
	body    []byte
	version uint64
	expires time.Time
}

// maxCachedResponse bounds one entry: larger responses are not kept.
const maxCachedResponse = 256 << 10

func newUsersCache(svc *resourceapi.Service, ttl time.Duration, maxBytes int) *usersCache {
	if ttl <= 0 || maxBytes <= 0 {
		return nil
	}
	if _, ok := svc.Version(resourceapi.Users, resourceapi.Posts); !ok {
		return nil // a store without a version to check
	}
	return &usersCache{service: svc, ttl: ttl, maxBytes: maxBytes, now: time.Now, items: map[[32]byte]*list.Element{}}
}

// cacheable reports whether op reads only what the cache may keep: users
// (whatever it selects of them: users, their posts, the posts' authors) and
// hello.
func cacheable(op *ast.OperationDefinition) bool {
	if op == nil || op.Operation != ast.Query || len(op.SelectionSet) == 0 {
		return false
	}
	users := false
	for _, sel := range op.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok {
			return false
		}
		switch f.Name {
		case "users":
			users = true
		case "hello", "__typename":
		default:
			return false
		}
	}
	return users
}

// key identifies a response: the document, operation and variables, and the
// caller's identity and effective permissions. ok is false for a request
// without a valid caller (nothing worth keeping).
func (c *usersCache) key(opCtx *graphql.OperationContext, caller *resourceapi.Caller) ([32]byte, bool) {
	var k [32]byte
	if caller == nil {
		return k, false
	}
	vars, err := json.Marshal(opCtx.Variables) // maps marshal with sorted keys
	if err != nil {
		return k, false
	}
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(opCtx.RawQuery)
	write(opCtx.OperationName)
	write(string(vars))
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], uint64(caller.UserID))
	h.Write(id[:])
	perms := make([]string, 0, len(caller.Permissions))
	for p, ok := range caller.Permissions {
		if ok {
			perms = append(perms, string(p))
		}
	}
	slices.Sort(perms)
	for _, p := range perms {
		write(p)
	}
	roles := slices.Clone(caller.Roles)
	slices.Sort(roles)
	for _, r := range roles {
		write("role:" + r)
	}
	h.Sum(k[:0])
	return k, true
}

// version returns the store's current version of every declared
// resource: a response of users may show, besides users and their posts,
// the records nested under a user (User.orders, generated from the
// declarations), so a write of any of them drops the entries.
func (c *usersCache) version() (uint64, bool) {
	return c.service.Version(resourceapi.Declared()...)
}

// get returns the body kept under k, if it is still current.
func (c *usersCache) get(k [32]byte) ([]byte, bool) {
	v, ok := c.version()
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.items[k]
	if el == nil {
		c.misses++
		return nil, false
	}
	e := el.Value.(*usersEntry)
	if e.version != v || !c.now().Before(e.expires) {
		c.remove(el)
		c.misses++
		return nil, false
	}
	c.hits++
	c.lru.MoveToFront(el)
	return e.body, true
}

// put keeps body under k if the version is still before, the one the
// response was computed under: a write that began meanwhile may not be in
// it.
func (c *usersCache) put(k [32]byte, before uint64, body []byte) {
	if len(body) > maxCachedResponse {
		return
	}
	if now, ok := c.version(); !ok || now != before {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.items[k]; el != nil {
		c.remove(el)
	}
	e := &usersEntry{key: k, body: body, version: before, expires: c.now().Add(c.ttl)}
	c.items[k] = c.lru.PushFront(e)
	c.bytes += len(body) + 128
	for c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *usersCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*usersEntry)
	delete(c.items, e.key)
	c.bytes -= len(e.body) + 128
}
