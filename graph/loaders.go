package graph

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/resourceapi/resourceapi"
)

// loaders batch the reads of related records within one response: every
// Post.author of a response is read with one Service.GetEach, every
// User.posts (per limit and offset) with one Service.ListEach. Both go
// through the rule layer with the caller, so a batch is allowed exactly
// when each of its reads would be.
//
// Batches form in two ways. A list resolver that knows its records' related
// keys reads them at once and primes the loaders (users primes the author
// loader with the users it read, and reads the posts of all of them when
// the query selects posts; posts reads the authors), so the common shapes
// cost a fixed number of statements with no waiting. Otherwise the loader
// waits loaderWait after its first key for the others of the response.
type loaders struct {
	users *dataloadgen.Loader[int64, resourceapi.Record]
	posts *dataloadgen.Loader[postsKey, []resourceapi.Record]
	// fetchPosts is the posts loader's fetch, for prefetchPosts.
	fetchPosts func(ctx context.Context, keys []postsKey) ([][]resourceapi.Record, []error)
	// postsFailed holds the errors of the keys prefetchPosts read, which
	// the loader cannot be primed with: their fields fail with them, as
	// they would with their own load, without a read or a wait of their
	// own (which lists.go's marshalList would run one after another).
	mu          sync.Mutex
	postsFailed map[postsKey]error
}

// postsKey is a User.posts field: the author and the field's arguments.
type postsKey struct {
	author        int64
	limit, offset int
}

// loaderWait is how long a loader gathers keys for a batch; the resolvers
// of one list run concurrently, so their keys arrive within microseconds.
const loaderWait = time.Millisecond

func newLoaders(ctx context.Context, svc *resourceapi.Service) *loaders {
	c, credErr := caller(ctx)
	b := budgetFrom(ctx)
	getUsers := func(ctx context.Context, ids []int64) ([]resourceapi.Record, []error) {
		recs := make([]resourceapi.Record, len(ids))
		if credErr != nil {
			return recs, []error{credErr}
		}
		// In as many reads as the response's budget of records needs: each
		// id is at most one record.
		var errs []error
		for start := 0; start < len(ids); {
			n := b.reserve(len(ids)-start, 1)
			if n == 0 {
				if errs == nil {
					errs = make([]error, len(ids))
				}
				for i := start; i < len(ids); i++ {
					errs[i] = b.stopErr()
				}
				break
			}
			part, perrs := svc.GetEach(ctx, c, resourceapi.Users, ids[start:start+n])
			read := 0
			for i, rec := range part {
				if rec != nil {
					read++
				}
				recs[start+i] = rec
				if perrs != nil && perrs[i] != nil {
					if errs == nil {
						errs = make([]error, len(ids))
					}
					errs[start+i] = perrs[i]
				}
			}
			b.release(n, read)
			start += n
		}
		return recs, errs
	}
	fetchPosts := func(ctx context.Context, keys []postsKey) ([][]resourceapi.Record, []error) {
		out := make([][]resourceapi.Record, len(keys))
		if credErr != nil {
			return out, []error{credErr}
		}
		// One ListEach per distinct limit and offset: nearly always one.
		type page struct{ limit, offset int }
		groups := map[page][]int{}
		var order []page
		for i, k := range keys {
			p := page{k.limit, k.offset}
			if _, ok := groups[p]; !ok {
				order = append(order, p)
			}
			groups[p] = append(groups[p], i)
		}
		var errs []error
		for _, p := range order {
			idx := groups[p]
			authors := make([]int64, len(idx))
			for j, i := range idx {
				authors[j] = keys[i].author
			}
			limit := p.limit
			q, err := listQuery(resourceapi.Posts, &limit, &p.offset)
			var lists [][]resourceapi.Record
			var lerrs []error
			if err != nil {
				lists, lerrs = make([][]resourceapi.Record, len(idx)), fillErr(len(idx), err)
			} else {
				lists, lerrs = listEachWithin(ctx, b, svc, c, authors, q)
			}
			for j, i := range idx {
				out[i] = lists[j]
				if lerrs != nil && lerrs[j] != nil {
					if errs == nil {
						errs = make([]error, len(keys))
					}
					errs[i] = lerrs[j]
				}
			}
		}
		return out, errs
	}
	return &loaders{
		users: dataloadgen.NewLoader(getUsers, dataloadgen.WithWait(loaderWait),
			dataloadgen.WithBatchCapacity(resourceapi.MaxLimit)),
		posts: dataloadgen.NewLoader(fetchPosts, dataloadgen.WithWait(loaderWait),
			dataloadgen.WithBatchCapacity(resourceapi.MaxLimit)),
		fetchPosts: fetchPosts,
	}
}

// listEachWithin reads the posts of each of authors, q.Limit at most each,
// in as many reads as the response's budget of records needs: a read of n
// authors may return n×q.Limit records, and is made only when they fit.
// Authors past what the budget allows fail with RECORD_LIMIT_EXCEEDED.
func listEachWithin(ctx context.Context, b *budget, svc *resourceapi.Service, c *resourceapi.Caller, authors []int64, q resourceapi.ListQuery) ([][]resourceapi.Record, []error) {
	lists := make([][]resourceapi.Record, len(authors))
	var errs []error
	for start := 0; start < len(authors); {
		n := b.reserve(len(authors)-start, q.Limit)
		if n == 0 {
			if errs == nil {
				errs = make([]error, len(authors))
			}
			for i := start; i < len(authors); i++ {
				errs[i] = b.stopErr()
			}
			break
		}
		part, perrs := svc.ListEach(ctx, c, resourceapi.Posts, authors[start:start+n], q)
		read := 0
		for i, list := range part {
			read += len(list)
			lists[start+i] = list
			if perrs != nil && perrs[i] != nil {
				if errs == nil {
					errs = make([]error, len(authors))
				}
				errs[start+i] = perrs[i]
			}
		}
		b.release(n*q.Limit, read)
		start += n
	}
	return lists, errs
}

func fillErr(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// lazyLoaders makes a response's loaders when a resolver first needs them:
// most responses (a subscription's event to each of thousands of
// subscribers, a single user) need none.
type lazyLoaders struct {
	once sync.Once
	svc  *resourceapi.Service
	ld   *loaders
}

// loadersFrom returns the loaders of the response ctx belongs to (see
// withResponse).
func loadersFrom(ctx context.Context) *loaders {
	l := &ctx.Value(responseKey{}).(*response).loaders
	l.once.Do(func() { l.ld = newLoaders(ctx, l.svc) })
	return l.ld
}

// postsArgs returns the limit and offset of a User.posts field as its key
// needs them: without a limit, resourceapi.MaxLimit.
func postsArgs(limit, offset *int) (int, int) {
	l, o := resourceapi.MaxLimit, 0
	if limit != nil {
		l = *limit
	}
	if offset != nil {
		o = *offset
	}
	return l, o
}

// prefetchPosts reads, in one batch, the posts of every user that the
// query's users field selects posts of (with each distinct limit and
// offset it selects them with), and primes the posts loader with them.
func (ld *loaders) prefetchPosts(ctx context.Context, users []*User) {
	if len(users) == 0 {
		return
	}
	fc := graphql.GetFieldContext(ctx)
	oc := graphql.GetOperationContext(ctx)
	if fc == nil || oc == nil {
		return
	}
	var keys []postsKey
	seen := map[[2]int]bool{}
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{"User"}) {
		if f.Name != "posts" {
			continue
		}
		args := f.ArgumentMap(oc.Variables)
		limit, offset := postsArgs(intArg(args["limit"]), intArg(args["offset"]))
		if seen[[2]int{limit, offset}] {
			continue
		}
		seen[[2]int{limit, offset}] = true
		for _, u := range users {
			keys = append(keys, postsKey{u.id, limit, offset})
		}
	}
	if len(keys) == 0 {
		return
	}
	lists, errs := ld.fetchPosts(ctx, keys)
	for i, k := range keys {
		// One error stands for every key (dataloadgen's convention).
		var err error
		if len(errs) == 1 {
			err = errs[0]
		} else if i < len(errs) {
			err = errs[i]
		}
		if err != nil {
			ld.mu.Lock()
			if ld.postsFailed == nil {
				ld.postsFailed = make(map[postsKey]error)
			}
			ld.postsFailed[k] = err
			ld.mu.Unlock()
			continue
		}
		ld.posts.Prime(k, lists[i])
	}
}

// loadPosts returns the posts of k: what prefetchPosts read, else through
// the loader.
func (ld *loaders) loadPosts(ctx context.Context, k postsKey) ([]resourceapi.Record, error) {
	ld.mu.Lock()
	err := ld.postsFailed[k]
	ld.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ld.posts.Load(ctx, k)
}

// prefetchAuthors reads the authors of posts in one batch, when the query
// selects them, and primes the users loader with them.
func (ld *loaders) prefetchAuthors(ctx context.Context, posts []*Post) {
	fc := graphql.GetFieldContext(ctx)
	oc := graphql.GetOperationContext(ctx)
	if len(posts) == 0 || fc == nil || oc == nil {
		return
	}
	selected := false
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{"Post"}) {
		selected = selected || f.Name == "author"
	}
	if !selected {
		return
	}
	ids := make([]int64, len(posts))
	for i, p := range posts {
		ids[i] = p.authorID
	}
	// LoadAll batches them (in batches of the loader's capacity) without
	// waiting for the fields' own loads.
	ld.users.LoadAll(ctx, ids) //nolint:errcheck // each field reports its own error
}

// intArg reads an Int argument from an argument map.
func intArg(v any) *int {
	switch n := v.(type) {
	case int:
		return &n
	case int64:
		i := int(n)
		return &i
	case float64:
		i := int(n)
		return &i
	case json.Number:
		if i, err := strconv.Atoi(string(n)); err == nil {
			return &i
		}
	}
	return nil
}
