package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// staticStore answers reads from memory with fixed records, so that the
// Static benchmarks measure the HTTP layer alone: routing, middleware,
// rendering, hashing.
type staticStore struct {
	resourceapi.Store
	page resourceapi.Page
}

func newStaticStore() *staticStore {
	s := &staticStore{}
	ts := time.Date(2026, 11, 21, 5, 7, 37, 123_000_000, time.UTC)
	for i := range 20 {
		s.page.Records = append(s.page.Records, resourceapi.Record{
			"id": int64(i + 1), "name": fmt.Sprintf("Ann Smith %d", i), "email": fmt.Sprintf("user%05d@example.com", i),
			"age": int64(30 + i), "roles": []string{"user"}, "created_at": ts, "updated_at": ts, "deleted": false,
		})
	}
	s.page.Total = 10_000
	return s
}

func (s *staticStore) Get(_ context.Context, _ *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	return s.page.Records[id%20], nil
}

func (s *staticStore) List(context.Context, *resourceapi.Resource, resourceapi.ListQuery) (resourceapi.Page, error) {
	return s.page, nil
}

// staticAuth is an Authenticator that takes any credential for an admin, so
// that the Static benchmarks measure no credential lookup either.
type staticAuth struct{ resourceapi.Authenticator }

func (staticAuth) Authenticate(context.Context, resourceapi.Credential) (resourceapi.Account, error) {
	return resourceapi.Account{User: resourceapi.Record{"id": int64(1), "roles": []string{resourceapi.RoleAdmin}},
		Permissions: []resourceapi.Permission{resourceapi.PermissionFor("users", resourceapi.ActionRead)}}, nil
}

// staticHandler serves the static store to an admin.
func staticHandler() http.Handler {
	svc := resourceapi.NewService(newStaticStore(), nil)
	svc.SetAuthenticator(staticAuth{})
	return withKey(rhttp.NewServer(rhttp.Config{Service: svc}).Handler(), "rak_static")
}

func BenchmarkStaticGetUser(b *testing.B) {
	h := staticHandler()
	serveParallel(b, h, func(i int64) *http.Request {
		return httptest.NewRequest("GET", fmt.Sprintf("/api/users/%d", 1+i%1000), nil)
	}, http.StatusOK)
}

func BenchmarkStaticListUsers(b *testing.B) {
	h := staticHandler()
	serveParallel(b, h, get("/api/users?page=3"), http.StatusOK)
}
