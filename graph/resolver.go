package graph

import (
	"context"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// The resolvers are thin: each reads its arguments into a call of the rule
// layer (resourceapi.Service) with the request's caller, and its result into
// the GraphQL types. Every permission and ownership rule is the Service's;
// errors reach the client through the presenter's one table (errors.go).

// resolver implements ResolverRoot over a Handler's dependencies.
type resolver struct{ h *Handler }

func (r *resolver) Query() QueryResolver               { return queryResolver{r} }
func (r *resolver) Mutation() MutationResolver         { return mutationResolver{r} }
func (r *resolver) Subscription() SubscriptionResolver { return subscriptionResolver{r} }
func (r *resolver) User() UserResolver                 { return userResolver{r} }
func (r *resolver) Post() PostResolver                 { return postResolver{r} }

type (
	queryResolver        struct{ *resolver }
	mutationResolver     struct{ *resolver }
	subscriptionResolver struct{ *resolver }
	userResolver         struct{ *resolver }
	postResolver         struct{ *resolver }
)

// Caps on lists read without a limit argument. users and posts return every
// record up to maxUnpaged (the spec's users "returns every user"), read in
// pages of resourceapi.MaxLimit; User.posts returns up to
// resourceapi.MaxLimit of each user's posts. Past a cap, clients page with
// limit and offset.
const maxUnpaged = 1000

// caller returns the request's caller, or why its credential was refused:
// a refused credential fails every field but hello with INVALID_TOKEN (or
// BAD_REQUEST for two credentials), rather than passing as no credential.
// A nil caller with a nil error is an anonymous request; the Service refuses
// it with UNAUTHENTICATED.
func caller(ctx context.Context) (*resourceapi.Caller, error) {
	if err := resourceapi.CredentialErrorFrom(ctx); err != nil {
		return nil, err
	}
	return resourceapi.CallerFrom(ctx), nil
}

// parseID reads an ID argument. An ID that is not a decimal integer is bad
// input; one out of the range of ids is returned as 0, which names no
// record.
func parseID(arg, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if n := len(s); n > 0 && strings.Trim(s, "0123456789") == "" {
			return 0, nil // digits, but too many: no record has it
		}
		return 0, badInput(arg, "must be a decimal integer id")
	}
	if id < 1 || id > resourceapi.MaxID {
		return 0, nil
	}
	return id, nil
}

// listQuery builds the query of a list field from its limit and offset:
// active records (not soft-deleted) by id. Without a limit it asks for the
// first page of unpaged reading.
func listQuery(res *resourceapi.Resource, limit, offset *int) (resourceapi.ListQuery, error) {
	q := resourceapi.ListQuery{Limit: resourceapi.MaxLimit}
	if err := checkPaging(limit, offset); err != nil {
		return q, err
	}
	if limit != nil {
		q.Limit = *limit
	}
	if offset != nil {
		q.Offset = *offset
	}
	if f := res.Filter("status"); f != nil {
		q.Filters = append(q.Filters, resourceapi.FilterValue{Filter: f, Value: resourceapi.StatusActive})
	}
	return resourceapi.NewListQuery(res, q)
}

// checkPaging refuses the limit and offset arguments of a list field by the
// rule layer's ranges.
func checkPaging(limit, offset *int) error {
	if limit != nil {
		if why := resourceapi.LimitRefused(*limit); why != "" {
			return badInput("limit", why)
		}
	}
	if offset != nil {
		if why := resourceapi.OffsetRefused(*offset); why != "" {
			return badInput("offset", why)
		}
	}
	return nil
}

// list reads the records of a root list field: one page with a limit, else
// pages up to maxUnpaged records.
func (r *resolver) list(ctx context.Context, res *resourceapi.Resource, limit, offset *int) ([]resourceapi.Record, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	q, err := listQuery(res, limit, offset)
	if err != nil {
		return nil, err
	}
	// With a limit the field is one page, and nothing reads its total.
	q.NoTotal = limit != nil
	b := budgetFrom(ctx)
	var out []resourceapi.Record
	shown := 0
	for {
		// Each page is read only when its records fit in the response's
		// budget, and the response stops as soon as what it selects of
		// them cannot (budget.go).
		if b.reserve(1, q.Limit) == 0 {
			return nil, b.stopErr()
		}
		page, err := r.h.cfg.Service.List(ctx, c, res, 0, q)
		b.release(q.Limit, len(page.Records))
		if err != nil {
			return nil, err
		}
		if shown += shownBytes(ctx, page.Records); !b.expect(shown) {
			return nil, b.stopErr()
		}
		if limit != nil {
			return page.Records, nil
		}
		out = append(out, page.Records...)
		if len(page.Records) < q.Limit || q.Offset+len(page.Records) >= page.Total || len(out) >= maxUnpaged {
			if len(out) > maxUnpaged {
				out = out[:maxUnpaged]
			}
			return out, nil
		}
		q.Offset += q.Limit
	}
}

// getOne reads one record within the response's budget of records.
func getOne(ctx context.Context, svc *resourceapi.Service, c *resourceapi.Caller, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	b := budgetFrom(ctx)
	if b.reserve(1, 1) == 0 {
		return nil, b.stopErr()
	}
	rec, err := svc.Get(ctx, c, res, resourceapi.Address{ID: id})
	read := 0
	if rec != nil {
		read = 1
	}
	b.release(1, read)
	return rec, err
}

func (r queryResolver) Hello(ctx context.Context) (*string, error) {
	s := "Hello, world!"
	return &s, nil
}

func (r queryResolver) Users(ctx context.Context, limit, offset *int) ([]*User, error) {
	recs, err := r.list(ctx, resourceapi.Users, limit, offset)
	if err != nil {
		return nil, err
	}
	users := make([]*User, len(recs))
	ld := loadersFrom(ctx)
	for i, rec := range recs {
		users[i] = userOf(rec)
		ld.users.Prime(users[i].id, rec)
	}
	ld.prefetchPosts(ctx, users)
	return users, nil
}

// Me returns the caller's own user, read as that user reads it.
func (r queryResolver) Me(ctx context.Context) (*User, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, resourceapi.ErrUnauthenticated()
	}
	if c.UserID == 0 {
		return nil, nil
	}
	rec, err := getOne(ctx, r.h.cfg.Service, c, resourceapi.Users, c.UserID)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return userOf(rec), nil
}

func (r queryResolver) User(ctx context.Context, id string) (*User, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	rec, err := getOne(ctx, r.h.cfg.Service, c, resourceapi.Users, n)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		// Only once the caller is known to be allowed to read users: an
		// unknown id is null, as the spec says.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return userOf(rec), nil
}

func (r queryResolver) Posts(ctx context.Context, limit, offset *int) ([]*Post, error) {
	recs, err := r.list(ctx, resourceapi.Posts, limit, offset)
	if err != nil {
		return nil, err
	}
	posts := make([]*Post, len(recs))
	for i, rec := range recs {
		posts[i] = postOf(rec)
	}
	loadersFrom(ctx).prefetchAuthors(ctx, posts)
	return posts, nil
}

func (r queryResolver) Post(ctx context.Context, id string) (*Post, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	rec, err := getOne(ctx, r.h.cfg.Service, c, resourceapi.Posts, n)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return postOf(rec), nil
}

func (r queryResolver) AdminData(ctx context.Context) (*AdminData, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.h.cfg.Service.RequireAdmin(ctx, c); err != nil {
		return nil, err
	}
	out := &AdminData{Version: r.h.cfg.Version}
	for _, count := range []struct {
		res *resourceapi.Resource
		n   *int
	}{{resourceapi.Users, &out.UserCount}, {resourceapi.Posts, &out.PostCount}} {
		one := 1
		q, err := listQuery(count.res, &one, nil)
		if err != nil {
			return nil, err
		}
		b := budgetFrom(ctx)
		if b.reserve(1, 1) == 0 {
			return nil, b.stopErr()
		}
		page, err := r.h.cfg.Service.List(ctx, c, count.res, 0, q)
		b.release(1, len(page.Records))
		if err != nil {
			return nil, err
		}
		*count.n = page.Total
	}
	return out, nil
}

// Posts reads the user's posts through the posts loader: with the other
// users' of the response, in one batch.
func (r userResolver) Posts(ctx context.Context, obj *User, limit, offset *int) ([]*Post, error) {
	if err := checkPaging(limit, offset); err != nil {
		return nil, err
	}
	l, o := postsArgs(limit, offset)
	recs, err := loadersFrom(ctx).loadPosts(ctx, postsKey{obj.id, l, o})
	if err != nil {
		return nil, err
	}
	if b := budgetFrom(ctx); !b.expect(shownBytes(ctx, recs)) {
		return nil, b.stopErr()
	}
	posts := make([]*Post, len(recs))
	for i, rec := range recs {
		posts[i] = postOf(rec)
	}
	return posts, nil
}

// Author reads the post's author through the users loader: with the other
// posts' authors of the response, in one batch.
func (r postResolver) Author(ctx context.Context, obj *Post) (*User, error) {
	rec, err := loadersFrom(ctx).users.Load(ctx, obj.authorID)
	if err != nil {
		return nil, err
	}
	return userOf(rec), nil
}
