package graph_test

import (
	"runtime/metrics"
	"testing"

	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// The elements of a list whose fields read nothing of their own are
// marshaled in the list field's goroutine (lists.go): 20 users with their
// posts (which the users field read in one batch) start no goroutine per
// user or per post, where gqlgen's marshaling started 60. A list whose
// elements select a field that reads (the posts' authors, through a loader
// that gathers their keys) still runs its elements at once, and its reads
// stay one batch (TestBatchedLoadsRunConstantStatements).
func TestListsWithoutReadsStartNoGoroutines(t *testing.T) {
	// SQLite, without the users cache, which would answer every request
	// but the first.
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) { o.UsersCacheTTL = -1 })
	mustUsers(t, s, 19, 2) // with the admin: 20 users, 38 posts
	created := func() uint64 {
		sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	perRequest := func(query string) float64 {
		t.Helper()
		s.mustData(s.admin, query, nil, nil) // a first request: connections, caches
		const n = 10
		before := created()
		for range n {
			var d struct{ Users []userData }
			s.mustData(s.admin, query, nil, &d)
			if len(d.Users) != 20 {
				t.Fatalf("%d users, want 20", len(d.Users))
			}
		}
		g := float64(created()-before) / n
		t.Logf("%s: %.1f goroutines started per request", query, g)
		return g
	}
	// The transport and the server start a few goroutines of their own per
	// request; 58 elements would start 58.
	if g := perRequest("{ users(limit: 20) { id name posts { title } } }"); g >= 20 {
		t.Errorf("users with their posts' titles: %.1f goroutines started per request, want fewer than 20", g)
	}
	if g := perRequest("{ users(limit: 20) { id posts { title author { name } } } }"); g < 20 {
		t.Errorf("users with their posts' authors: %.1f goroutines started per request, want the elements' (at least 20)", g)
	}
}
