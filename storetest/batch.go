package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// testBatch checks resourceapi.BatchStore, for stores that implement it:
// GetMany finds the ids that exist, whatever repeats or unknown ids the
// list holds, and ListEach applies limit, offset and sort to each parent's
// records separately, in one call, and sees writes made since.
func testBatch(t *testing.T, open func(t *testing.T) resourceapi.Store) {
	s := open(t)
	bs, ok := s.(resourceapi.BatchStore)
	if !ok {
		t.Skip("the store does not implement resourceapi.BatchStore")
	}
	ctx := timeout(t)
	var authors []int64
	for i := range 3 {
		authors = append(authors, mustCreate(t, s, user(fmt.Sprintf("Author %d", i), fmt.Sprintf("author%d@example.com", i))).ID())
	}
	posts := map[int64][]int64{}
	for n := range 4 {
		for _, a := range authors[:2] { // the third author has none
			rec := mustValidPost(t, resourceapi.Record{"title": fmt.Sprintf("Post %d", n), "content": "Text", "author_id": a})
			p, err := s.Create(ctx, resourceapi.Posts, rec)
			if err != nil {
				t.Fatalf("create post: %v", err)
			}
			posts[a] = append(posts[a], p.ID())
		}
	}

	got, err := bs.GetMany(ctx, resourceapi.Users, []int64{authors[1], 999_999, authors[0], authors[1]})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if g := ids(got); len(g) != 2 || !slices.Contains(g, authors[0]) || !slices.Contains(g, authors[1]) {
		t.Fatalf("GetMany = %v, want %d and %d", g, authors[0], authors[1])
	}

	each := func(limit, offset int, desc bool) map[int64][]int64 {
		t.Helper()
		q, err := resourceapi.NewListQuery(resourceapi.Posts, resourceapi.ListQuery{Limit: limit, Offset: offset, Desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := bs.ListEach(ctx, resourceapi.Posts, "author_id", authors, q)
		if err != nil {
			t.Fatalf("ListEach: %v", err)
		}
		out := map[int64][]int64{}
		for _, r := range recs {
			a := r["author_id"].(int64)
			out[a] = append(out[a], r.ID())
		}
		return out
	}
	g := each(2, 1, false)
	for _, a := range authors[:2] {
		if want := posts[a][1:3]; !slices.Equal(g[a], want) {
			t.Fatalf("ListEach(limit 2, offset 1) of author %d = %v, want %v", a, g[a], want)
		}
	}
	if len(g[authors[2]]) != 0 {
		t.Fatalf("ListEach of an author without posts = %v", g[authors[2]])
	}
	g = each(100, 0, true)
	want := slices.Clone(posts[authors[0]])
	slices.Reverse(want)
	if !slices.Equal(g[authors[0]], want) {
		t.Fatalf("ListEach in descending order = %v, want %v", g[authors[0]], want)
	}
	// A write is seen by the next call (a store that caches drops it).
	rec := mustValidPost(t, resourceapi.Record{"title": "Later", "content": "Text", "author_id": authors[2]})
	p, err := s.Create(ctx, resourceapi.Posts, rec)
	if err != nil {
		t.Fatal(err)
	}
	if g := each(100, 0, true); !slices.Equal(g[authors[2]], []int64{p.ID()}) {
		t.Fatalf("ListEach after a create = %v, want [%d]", g[authors[2]], p.ID())
	}
}

func mustValidPost(tb testing.TB, rec resourceapi.Record) resourceapi.Record {
	tb.Helper()
	if err := resourceapi.Validate(resourceapi.Posts, rec, resourceapi.ModeCreate); err != nil {
		tb.Fatalf("Validate(%v) = %v; the suite's own post is invalid", rec, err)
	}
	return rec
}
