package resourceapi

import (
	"context"
	"fmt"
)

// BatchStore is implemented by stores that read the records of many ids, or
// of many parents, in one query: what batched reads (GraphQL's data loaders)
// need so that a list of n records with their related records costs a
// constant number of queries instead of n. The Service falls back to one
// read per id or parent for a store without it.
type BatchStore interface {
	// GetMany returns the records of res whose ids are among ids, in any
	// order; an id that names no record is left out.
	GetMany(ctx context.Context, res *Resource, ids []int64) ([]Record, error)
	// ListEach returns, for each of values, the records of res whose field
	// holds it and that match q's filters and search, sorted as q says: q.Limit
	// of them from q.Offset, applied to each value's records separately.
	// field is an integer field with a FilterEqual filter (a parent or owner
	// field). The records come grouped by value, in any order of the groups.
	ListEach(ctx context.Context, res *Resource, field string, values []int64, q ListQuery) ([]Record, error)
}

// GetEach returns the record of each of ids, in order, as Get would return
// it to c: errs is nil when every record was read, and otherwise holds one
// error per id, nil for those that were (CodeNotFound for an id that names
// no record, CodeForbidden for one c may not read). The permission is
// checked once and the store reads every record in one query.
func (s *Service) GetEach(ctx context.Context, c *Caller, res *Resource, ids []int64) (recs []Record, errs []error) {
	err := s.readConfirmed(ctx, c, func(ctx context.Context, c *Caller) error {
		recs, errs = s.getEachAs(ctx, c, res, ids)
		return nil
	})
	if err != nil {
		return make([]Record, len(ids)), fill(len(ids), err)
	}
	return recs, errs
}

func (s *Service) getEachAs(ctx context.Context, c *Caller, res *Resource, ids []int64) (recs []Record, errs []error) {
	recs = make([]Record, len(ids))
	a, err := s.permit(c, res, OpRead)
	if err != nil {
		return recs, fill(len(ids), err)
	}
	byID, err := s.getMany(ctx, res, ids)
	if err != nil {
		return recs, fill(len(ids), err)
	}
	for i, id := range ids {
		rec := byID[id]
		if rec == nil {
			err = ErrNotFound(res)
		} else {
			err = s.check(c, res, OpRead, a, Address{ID: id}, rec)
		}
		if err != nil {
			if errs == nil {
				errs = make([]error, len(ids))
			}
			errs[i] = err
			continue
		}
		recs[i] = rec
	}
	return recs, errs
}

func (s *Service) getMany(ctx context.Context, res *Resource, ids []int64) (map[int64]Record, error) {
	byID := make(map[int64]Record, len(ids))
	if bs, ok := s.store.(BatchStore); ok {
		list, err := bs.GetMany(ctx, res, ids)
		if err != nil {
			return nil, err
		}
		for _, rec := range list {
			byID[rec.ID()] = rec
		}
		return byID, nil
	}
	for _, id := range ids {
		rec, err := s.store.Get(ctx, res, id)
		if ErrorCode(err) == CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		byID[id] = rec
	}
	return byID, nil
}

// ListEach returns, for each parent in parents, in order, the records that
// List(ctx, c, res, parent, q) would return (without the total): the nested
// collections of many parents read at once, with the permission checked once
// and one query of the store. q.Limit and q.Offset apply to each parent's
// records. A parent that does not exist has no records. errs is as for
// GetEach: nil, or one error per parent (a private resource's records of
// another user are CodeForbidden to anyone but an admin).
func (s *Service) ListEach(ctx context.Context, c *Caller, res *Resource, parents []int64, q ListQuery) (lists [][]Record, errs []error) {
	err := s.readConfirmed(ctx, c, func(ctx context.Context, c *Caller) error {
		lists, errs = s.listEachAs(ctx, c, res, parents, q)
		return nil
	})
	if err != nil {
		return make([][]Record, len(parents)), fill(len(parents), err)
	}
	return lists, errs
}

func (s *Service) listEachAs(ctx context.Context, c *Caller, res *Resource, parents []int64, q ListQuery) (lists [][]Record, errs []error) {
	lists = make([][]Record, len(parents))
	if res.Parent == "" {
		return lists, fill(len(parents), fmt.Errorf("list each %s: the resource has no parent", res.Name))
	}
	a, err := s.permit(c, res, OpRead)
	if err != nil {
		return lists, fill(len(parents), err)
	}
	if err := q.Check(res); err != nil {
		return lists, fill(len(parents), err)
	}
	values := parents
	if (res.Access.Private || a == ifOwner) && !c.IsAdmin() {
		// Only the caller's own records, as List: another user's nested
		// collection is a refusal, not an empty list.
		if res.parentIsOwner() {
			values = nil
			for i, p := range parents {
				if p == c.UserID {
					values = append(values, p)
					continue
				}
				if errs == nil {
					errs = make([]error, len(parents))
				}
				errs[i] = Errorf(CodeForbidden, "Only the owner of these %s or an admin may read them", res.Name)
			}
		}
		q.Filters = append(q.Filters, FilterValue{Filter: res.ownerFilter(), Value: c.UserID})
	}
	if len(values) == 0 {
		return lists, errs
	}
	var recs []Record
	if bs, ok := s.store.(BatchStore); ok {
		recs, err = bs.ListEach(ctx, res, res.Parent, values, q)
	} else {
		recs, err = s.listEach(ctx, res, values, q)
	}
	if err != nil {
		return lists, fill(len(parents), err)
	}
	groups := make(map[int64][]Record, len(values))
	for _, rec := range recs {
		p := res.ParentOf(rec)
		groups[p] = append(groups[p], rec)
	}
	for i, p := range parents {
		if errs != nil && errs[i] != nil {
			continue
		}
		lists[i] = groups[p]
		if lists[i] == nil {
			lists[i] = []Record{}
		}
	}
	return lists, errs
}

// listEach is ListEach for a store that is not a BatchStore: a List per
// parent.
func (s *Service) listEach(ctx context.Context, res *Resource, parents []int64, q ListQuery) ([]Record, error) {
	var out []Record
	base := q.Filters
	for _, p := range parents {
		q.Filters = append(base[:len(base):len(base)], FilterValue{Filter: res.parentFilter(), Value: p})
		page, err := s.store.List(ctx, res, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Records...)
	}
	return out, nil
}

func fill(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}
