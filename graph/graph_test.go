package graph_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// forEachStore runs f against a fresh server and database of every backend.
func forEachStore(t *testing.T, f func(t *testing.T, s *server)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, mustServer(t, b.open(t, nil)))
		})
	}
}

type userData struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	CreatedAt string `json:"createdAt"`
	Posts     []struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Author *struct {
			ID string `json:"id"`
		} `json:"author"`
	} `json:"posts"`
}

func TestHelloIsPublic(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *server) {
		var d struct{ Hello string }
		s.mustData("", "{ hello }", nil, &d)
		if d.Hello == "" {
			t.Fatal("hello is empty")
		}
		// A refused credential does not stop hello, but fails every other
		// field with INVALID_TOKEN, not UNAUTHENTICATED.
		r := s.post("rk_not-a-key", "{ hello users { id } }", nil)
		if !strings.Contains(string(r.Data), `"hello":"Hello, world!"`) {
			t.Fatalf("data = %s, want hello", r.Data)
		}
		wantError(t, r, "INVALID_TOKEN", "")
		if got := r.Errors[0].Path; len(got) != 1 || got[0] != "users" {
			t.Fatalf("error path = %v, want [users]", got)
		}
	})
}

func TestAuthenticationAndAdmin(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *server) {
		user := s.mustAccount("Ordinary", "ordinary@test.example", resourceapi.RoleUser)
		wantError(t, s.post("", "{ users { id } }", nil), "UNAUTHENTICATED", "Authentication required")
		wantError(t, s.post("", `{ user(id: "1") { id } }`, nil), "UNAUTHENTICATED", "Authentication required")
		wantError(t, s.post(user, "{ adminData { userCount } }", nil), "FORBIDDEN", "Admin access required")
		wantError(t, s.post("", "{ adminData { userCount } }", nil), "UNAUTHENTICATED", "Authentication required")
		s.mustPost(1, "First")
		var d struct {
			AdminData struct {
				UserCount, PostCount int
				Version              string
			}
		}
		s.mustData(s.admin, "{ adminData { userCount postCount version } }", nil, &d)
		if d.AdminData.UserCount != 2 || d.AdminData.PostCount != 1 || d.AdminData.Version != "test" {
			t.Fatalf("adminData = %+v, want 2 users, 1 post, version test", d.AdminData)
		}
		// Every scheme of REST works here too: Bearer and Basic.
		// A token carries its user's security stamp.
		acct, err := s.service.Store().(resourceapi.IdentityStore).AccountByID(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := s.tokens.Issue(resourceapi.Claims{Subject: "1", Name: "Test Admin", Stamp: acct.Stamp})
		if err != nil {
			t.Fatal(err)
		}
		if r := s.post("", "{ users { id } }", nil, "Authorization", "Bearer "+tok); len(r.Errors) > 0 {
			t.Fatalf("bearer: %+v", r.Errors)
		}
		if r := s.post("", "{ users { id } }", nil, "Authorization", basic("admin@test.example", "correct horse battery")); len(r.Errors) > 0 {
			t.Fatalf("basic: %+v", r.Errors)
		}
		// A user without users:read reads only their own record, as over
		// REST.
		none := s.mustAccount("Nobody", "nobody@test.example")
		var list struct{ Users []userData }
		s.mustData(none, "{ users { id } }", nil, &list)
		noneID := itoa(s.ids["nobody@test.example"])
		if len(list.Users) != 1 || list.Users[0].ID != noneID {
			t.Fatalf("users of a user without users:read = %+v, want only their own", list.Users)
		}
		var own struct{ User userData }
		s.mustData(none, `query($id: ID!) { user(id: $id) { name } }`, map[string]any{"id": noneID}, &own)
		if own.User.Name != "Nobody" {
			t.Fatalf("own record = %+v", own.User)
		}
		wantError(t, s.post(none, `{ user(id: "1") { name } }`, nil), "FORBIDDEN", "Permission denied: users:read")
	})
}

func TestQueries(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *server) {
		ada := s.mustUser("Ada", "ada@test.example")
		bob := s.mustUser("Bob", "bob@test.example")
		p2 := s.mustPost(ada, "Second")
		p1 := s.mustPost(bob, "By Bob")
		p3 := s.mustPost(ada, "Third")
		var d struct{ Users []userData }
		s.mustData(s.admin, "{ users { id name email createdAt posts { id title author { id } } } }", nil, &d)
		if len(d.Users) != 3 || d.Users[1].Name != "Ada" || d.Users[2].Email != "bob@test.example" {
			t.Fatalf("users = %+v", d.Users)
		}
		if got := d.Users[1].Posts; len(got) != 2 || got[0].ID != itoa(p2) || got[1].ID != itoa(p3) || got[0].Author.ID != itoa(ada) {
			t.Fatalf("Ada's posts = %+v, want %d then %d by %d", got, p2, p3, ada)
		}
		if !strings.HasSuffix(d.Users[1].CreatedAt, "Z") || len(d.Users[1].CreatedAt) != len("2026-11-21T05:07:37.123Z") {
			t.Fatalf("createdAt = %q, want RFC 3339 UTC with milliseconds", d.Users[1].CreatedAt)
		}
		s.mustData(s.admin, "{ users(limit: 1, offset: 1) { id } }", nil, &d)
		if len(d.Users) != 1 || d.Users[0].ID != itoa(ada) {
			t.Fatalf("users(limit: 1, offset: 1) = %+v", d.Users)
		}
		var u struct{ User *userData }
		s.mustData(s.admin, `query($id: ID!) { user(id: $id) { name posts(limit: 1, offset: 1) { title } } }`, map[string]any{"id": itoa(ada)}, &u)
		if u.User == nil || u.User.Name != "Ada" || len(u.User.Posts) != 1 || u.User.Posts[0].Title != "Third" {
			t.Fatalf("user = %+v", u.User)
		}
		s.mustData(s.admin, `{ user(id: "999999") { name } }`, nil, &u)
		if u.User != nil {
			t.Fatalf("unknown user = %+v, want null", u.User)
		}
		var p struct {
			Posts []struct {
				ID     string
				Author struct{ Name string }
			}
			Post *struct{ Title string }
		}
		s.mustData(s.admin, `{ posts { id author { name } } post(id: "`+itoa(p1)+`") { title } }`, nil, &p)
		if len(p.Posts) != 3 || p.Posts[1].Author.Name != "Bob" || p.Post == nil || p.Post.Title != "By Bob" {
			t.Fatalf("posts = %+v", p)
		}
		r := s.post(s.admin, `{ user(id: "seven") { id } }`, nil)
		wantError(t, r, "BAD_USER_INPUT", "")
		if r.Errors[0].Extensions["field"] != "id" {
			t.Fatalf("field = %v, want id", r.Errors[0].Extensions["field"])
		}
		r = s.post(s.admin, `{ users(limit: 0) { id } }`, nil)
		wantError(t, r, "BAD_USER_INPUT", "Invalid limit: must be between 1 and 100")
		if r.Errors[0].Extensions["field"] != "limit" {
			t.Fatalf("field = %v, want limit", r.Errors[0].Extensions["field"])
		}
	})
}

func TestMutations(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *server) {
		var c struct{ CreateUser userData }
		s.mustData(s.admin, `mutation { createUser(name: " Grace ", email: "grace@test.example") { id name email } }`, nil, &c)
		if c.CreateUser.ID == "" || c.CreateUser.Name != "Grace" {
			t.Fatalf("createUser = %+v", c.CreateUser)
		}
		id := c.CreateUser.ID
		r := s.post(s.admin, `mutation { createUser(name: "Dup", email: "GRACE@test.example") { id } }`, nil)
		wantError(t, r, "CONFLICT", "")
		r = s.post(s.admin, `mutation { createUser(name: "Bad", email: "not an address") { id } }`, nil)
		wantError(t, r, "BAD_USER_INPUT", "")
		if r.Errors[0].Extensions["field"] != "email" {
			t.Fatalf("field = %v, want email", r.Errors[0].Extensions["field"])
		}

		// updateUser changes only what is given and not empty.
		var u struct{ UpdateUser userData }
		s.mustData(s.admin, `mutation($id: ID!) { updateUser(id: $id, name: "Grace Hopper", email: "") { name email } }`, map[string]any{"id": id}, &u)
		if u.UpdateUser.Name != "Grace Hopper" || u.UpdateUser.Email != "grace@test.example" {
			t.Fatalf("updateUser = %+v", u.UpdateUser)
		}
		s.mustData(s.admin, `mutation($id: ID!) { updateUser(id: $id, email: "hopper@test.example") { name email } }`, map[string]any{"id": id}, &u)
		if u.UpdateUser.Name != "Grace Hopper" || u.UpdateUser.Email != "hopper@test.example" {
			t.Fatalf("updateUser = %+v", u.UpdateUser)
		}
		wantError(t, s.post(s.admin, `mutation { updateUser(id: "424242", name: "X") { id } }`, nil), "NOT_FOUND", "User not found")

		// Permissions as over REST.
		user := s.mustAccount("Ordinary", "ordinary@test.example", resourceapi.RoleUser)
		wantError(t, s.post(user, `mutation { createUser(name: "X", email: "x@test.example") { id } }`, nil),
			"FORBIDDEN", "Permission denied: users:write")
		wantError(t, s.post(user, `mutation { deleteUser(id: "1") }`, nil), "FORBIDDEN", "Permission denied: users:delete")
		wantError(t, s.post("", `mutation { createUser(name: "X", email: "x@test.example") { id } }`, nil),
			"UNAUTHENTICATED", "Authentication required")
		// A user updates their own record without users:write.
		userID := itoa(s.ids["ordinary@test.example"])
		s.mustData(user, `mutation($id: ID!) { updateUser(id: $id, name: "Renamed") { name } }`, map[string]any{"id": userID}, &u)
		if u.UpdateUser.Name != "Renamed" {
			t.Fatalf("own update = %+v", u.UpdateUser)
		}

		// createPost: the caller's own, unless an admin.
		var p struct {
			CreatePost struct {
				ID     string
				Author struct{ ID string }
			}
		}
		s.mustData(user, `mutation($id: ID!) { createPost(title: "Mine", content: "Text", authorId: $id) { id author { id } } }`, map[string]any{"id": userID}, &p)
		if p.CreatePost.Author.ID != userID {
			t.Fatalf("createPost = %+v", p.CreatePost)
		}
		wantError(t, s.post(user, `mutation($a: ID!) { createPost(title: "Theirs", content: "Text", authorId: $a) { id } }`,
			map[string]any{"a": id}), "FORBIDDEN", "")
		s.mustData(s.admin, `mutation($a: ID!) { createPost(title: "For Grace", content: "Text", authorId: $a) { id author { id } } }`,
			map[string]any{"a": id}, &p)
		if p.CreatePost.Author.ID != id {
			t.Fatalf("admin's createPost = %+v, want author %s", p.CreatePost, id)
		}
		r = s.post(s.admin, `mutation { createPost(title: "", content: "Text", authorId: "1") { id } }`, nil)
		wantError(t, r, "BAD_USER_INPUT", "")
		if r.Errors[0].Extensions["field"] != "title" {
			t.Fatalf("field = %v, want title", r.Errors[0].Extensions["field"])
		}
		r = s.post(s.admin, `mutation { createPost(title: "T", content: "Text", authorId: "77777") { id } }`, nil)
		wantError(t, r, "BAD_USER_INPUT", "")
		if r.Errors[0].Extensions["field"] != "authorId" {
			t.Fatalf("field = %v, want authorId", r.Errors[0].Extensions["field"])
		}

		// deleteUser: true, the posts go with the user; false the second time.
		var del struct{ DeleteUser *bool }
		s.mustData(s.admin, `mutation($id: ID!) { deleteUser(id: $id) }`, map[string]any{"id": id}, &del)
		if del.DeleteUser == nil || !*del.DeleteUser {
			t.Fatalf("deleteUser = %v, want true", del.DeleteUser)
		}
		s.mustData(s.admin, `mutation($id: ID!) { deleteUser(id: $id) }`, map[string]any{"id": id}, &del)
		if del.DeleteUser == nil || *del.DeleteUser {
			t.Fatalf("second deleteUser = %v, want false", del.DeleteUser)
		}
		var posts struct{ Posts []struct{ Title string } }
		s.mustData(s.admin, `{ posts { title } }`, nil, &posts)
		if len(posts.Posts) != 1 || posts.Posts[0].Title != "Mine" {
			t.Fatalf("posts after deleteUser = %+v, want only Mine", posts.Posts)
		}
	})
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	// The last admin cannot be deleted: a rule's refusal keeps its message.
	wantError(t, s.post(s.admin, `mutation { deleteUser(id: "1") }`, nil), "UNPROCESSABLE",
		"The last admin cannot be removed, deleted or demoted")
	r := s.post(s.admin, `{ hello }`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status = %d", r.status)
	}
}
