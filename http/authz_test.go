package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// The authorization matrix: every route of every declared resource, for
// every kind of caller, against an oracle computed from the declarations
// alone (the default roles' permissions and each resource's Access). The same
// cases run against the rule layer (resourceapi.Service) directly, so that a
// rule that exists only in a handler, or only in the service, shows up as a
// difference. A resource declared later joins the matrix without edits.

// kind is a kind of caller.
type kind string

const (
	kNone    kind = "no credential"
	kInvalid kind = "invalid credential"
	kUser    kind = "user"
	kEditor  kind = "editor"
	kAdmin   kind = "admin"
	// kSelf is a user acting on a record they own.
	kSelf kind = "self"
)

// route is an operation as the matrix exercises it.
type route struct {
	name string
	op   resourceapi.Op
	item bool // addresses one record
}

var matrixRoutes = []route{
	{"list", resourceapi.OpRead, false},
	{"create", resourceapi.OpCreate, false},
	{"get", resourceapi.OpRead, true},
	{"replace", resourceapi.OpReplace, true},
	{"update", resourceapi.OpUpdate, true},
	{"delete", resourceapi.OpDelete, true},
}

// expect is the oracle: the outcome of rt on a record of res owned by
// someone else (by the caller for kSelf), from the declarations alone. It
// returns the error code, or "" for success.
func expect(res *resourceapi.Resource, rt route, k kind) resourceapi.Code {
	switch k {
	case kNone:
		return resourceapi.CodeUnauthenticated
	case kInvalid:
		return resourceapi.CodeInvalidToken
	}
	role := map[kind]string{kUser: resourceapi.RoleUser, kSelf: resourceapi.RoleUser,
		kEditor: resourceapi.RoleEditor, kAdmin: resourceapi.RoleAdmin}[k]
	caller := resourceapi.NewCaller(1, "", []string{role}, resourceapi.DefaultRoles())
	can := caller.Can(resourceapi.PermissionFor(res.Name, rt.op.Action()))
	access := res.Access
	selfMay := access.Owner != "" && slices.Contains(access.Self, rt.op)
	if !rt.item {
		// Lists and creates: an owner may list and create their own records.
		if can || selfMay {
			return ""
		}
		return resourceapi.CodeForbidden
	}
	self := k == kSelf
	if !can && !(self && selfMay) {
		return resourceapi.CodeForbidden
	}
	// Private: only the owner does anything; Guarded: only the owner changes.
	restricted := access.Private || (access.Guarded && (rt.op == resourceapi.OpReplace || rt.op == resourceapi.OpUpdate))
	if restricted && !self && k != kAdmin {
		return resourceapi.CodeForbidden
	}
	return ""
}

var successStatus = map[string]int{"list": 200, "create": 201, "get": 200, "replace": 200, "update": 200, "delete": 204}

// matrix holds the accounts the cases act as.
type matrix struct {
	t       *testing.T
	admin   *client
	keys    map[kind]string
	callers map[kind]*resourceapi.Caller
	other   int64 // the user who owns the records others act on
	n       int   // numbers examples, so that each is distinct
}

func newMatrix(t *testing.T, admin *client) *matrix {
	m := &matrix{t: t, admin: admin, keys: map[kind]string{kAdmin: admin.auth[1]}, callers: map[kind]*resourceapi.Caller{}}
	m.keys[kUser] = admin.mustAccount("Matrix User", "matrix-user@example.com", resourceapi.RoleUser)
	m.keys[kEditor] = admin.mustAccount("Matrix Editor", "matrix-editor@example.com", resourceapi.RoleEditor)
	for _, k := range []kind{kAdmin, kUser, kEditor} {
		m.callers[k] = m.caller(m.keys[k])
	}
	m.other = m.callers[kUser].UserID
	// The records others act on belong to a plain user of their own.
	otherKey := admin.mustAccount("Matrix Other", "matrix-other@example.com", resourceapi.RoleUser)
	m.other = m.caller(otherKey).UserID
	return m
}

func (m *matrix) caller(key string) *resourceapi.Caller {
	m.t.Helper()
	c, err := m.admin.service.Authenticate(context.Background(),
		resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key})
	if err != nil {
		m.t.Fatalf("authenticate: %v", err)
	}
	return c
}

// example returns a fresh valid create body of res, with the records it
// refers to (other than its owner) created for it.
func (m *matrix) example(res *resourceapi.Resource) resourceapi.Record {
	m.n++
	rec := res.Example(m.n)
	for _, f := range res.Fields {
		if f.References != "" && f.Name != res.Access.Owner && f.Required {
			if _, ok := rec[f.Name]; !ok {
				rec[f.Name] = m.target(resourceapi.ResourceNamed(f.References), m.other)
			}
		}
		items, _ := rec[f.Name].([]resourceapi.Record)
		for _, item := range items {
			for _, sub := range f.Items.Fields {
				if sub.References != "" {
					item[sub.Name] = m.target(resourceapi.ResourceNamed(sub.References), m.other)
				}
			}
		}
	}
	return rec
}

// target creates a record of res owned by owner (for users: a new user;
// owner is then ignored) and returns its id.
func (m *matrix) target(res *resourceapi.Resource, owner int64) int64 {
	m.t.Helper()
	rec := m.example(res)
	if o := res.Access.Owner; o != "" && o != "id" {
		rec[o] = owner
	}
	out, err := m.admin.service.Create(context.Background(), resourceapi.SystemCaller(), res, 0, rec)
	if err != nil {
		m.t.Fatalf("create a %s to act on: %v", res.Singular, err)
	}
	return out.ID()
}

// selfAccount returns a fresh user's key and caller: self cases may change or
// delete what they own, so each gets its own.
func (m *matrix) selfAccount() (string, *resourceapi.Caller) {
	m.n++
	key := m.admin.mustAccount("Matrix Self", fmt.Sprintf("matrix-self%d@example.com", m.n), resourceapi.RoleUser)
	return key, m.caller(key)
}

// patch returns a PATCH body of res: the first field of an example (in
// declaration order) that is not a reference.
func (m *matrix) patch(res *resourceapi.Resource) resourceapi.Record {
	ex := m.example(res)
	for _, f := range res.Fields {
		if v, ok := ex[f.Name]; ok && f.References == "" {
			return resourceapi.Record{f.Name: v}
		}
	}
	m.t.Fatalf("%s: no field to patch in its example", res.Name)
	return nil
}

func TestAuthorizationMatrix(t *testing.T) {
	forEachStore(t, func(t *testing.T, admin *client) {
		m := newMatrix(t, admin)
		cases := 0
		for _, res := range resourceapi.Declared() {
			for _, rt := range matrixRoutes {
				kinds := []kind{kNone, kInvalid, kUser, kEditor, kAdmin}
				if rt.item && res.Access.Owner != "" {
					kinds = append(kinds, kSelf)
				}
				for _, k := range kinds {
					want := expect(res, rt, k)
					name := fmt.Sprintf("%s %s as %s", rt.name, res.Name, k)
					m.overHTTP(t, name, res, rt, k, want)
					if k != kInvalid { // a transport's matter: the service gets callers
						m.direct(t, name, res, rt, k, want)
					}
					cases++
				}
			}
			if res.Parent != "" {
				m.nested(t, res)
			}
		}
		t.Logf("%d cases over HTTP, and again against the rule layer", cases)
	})
}

// overHTTP runs one case as a request to the route.
func (m *matrix) overHTTP(t *testing.T, name string, res *resourceapi.Resource, rt route, k kind, want resourceapi.Code) {
	t.Helper()
	c := m.admin.anonymous()
	switch k {
	case kNone:
	case kInvalid:
		c = m.admin.as("rak_" + "AAAAAAAAAAAAAAAAAAAAAAAAAA")
	case kSelf:
		key, _ := m.selfAccount()
		c = m.admin.as(key)
	default:
		c = m.admin.as(m.keys[k])
	}
	path := "/api/" + res.Path
	if rt.item {
		owner := m.other
		if k == kSelf {
			owner = m.caller(c.auth[1]).UserID
		}
		id := owner
		if res != resourceapi.Users {
			id = m.target(res, owner)
		} else if k != kSelf {
			id = m.target(res, 0)
		}
		path += "/" + strconv.FormatInt(id, 10)
	}
	var body string
	switch rt.name {
	case "create", "replace":
		body = mustJSON(t, m.example(res))
	case "update":
		body = mustJSON(t, m.patch(res))
	}
	method := map[string]string{"list": "GET", "create": "POST", "get": "GET", "replace": "PUT", "update": "PATCH", "delete": "DELETE"}[rt.name]
	r := c.do(method, path, body)
	if want == "" {
		if r.StatusCode != successStatus[rt.name] {
			t.Errorf("%s: HTTP %s %s = %d, want %d; body %s", name, method, path, r.StatusCode, successStatus[rt.name], r.body)
		}
		return
	}
	var env struct {
		Error struct{ Code resourceapi.Code }
	}
	json.Unmarshal(r.body, &env)
	if env.Error.Code != want {
		t.Errorf("%s: HTTP %s %s = %d %s, want %s; body %s", name, method, path, r.StatusCode, env.Error.Code, want, r.body)
	}
}

// direct runs one case as a call of the rule layer.
func (m *matrix) direct(t *testing.T, name string, res *resourceapi.Resource, rt route, k kind, want resourceapi.Code) {
	t.Helper()
	ctx := context.Background()
	caller := m.callers[k] // nil for kNone
	owner := m.other
	if k == kSelf {
		_, caller = m.selfAccount()
		owner = caller.UserID
	}
	var id int64
	if rt.item {
		switch {
		case res != resourceapi.Users:
			id = m.target(res, owner)
		case k == kSelf:
			id = owner
		default:
			id = m.target(res, 0)
		}
	}
	item := resourceapi.Address{ID: id}
	svc := m.admin.service
	var err error
	switch rt.name {
	case "list":
		_, err = svc.List(ctx, caller, res, 0, resourceapi.ListQuery{Limit: 10, Sort: "id"})
	case "create":
		_, err = svc.Create(ctx, caller, res, 0, m.example(res))
	case "get":
		_, err = svc.Get(ctx, caller, res, item)
	case "replace":
		_, _, err = svc.Replace(ctx, caller, res, item, m.example(res), nil)
	case "update":
		_, err = svc.Update(ctx, caller, res, item, m.patch(res), nil)
	case "delete":
		err = svc.Delete(ctx, caller, res, item, nil)
	}
	if got := resourceapi.ErrorCode(err); got != want {
		t.Errorf("%s: rule layer error %v (code %q), want %q", name, err, got, want)
	}
}

// nested checks the nested routes of res (/<parent>/{id}/<res>): a list
// holds only the parent's records; a record addressed under another parent
// is not found; an absent parent is 404; a POST takes the parent from the
// path; and where the parent is the owner (/users/{id}/api-keys) of private
// records, a user lists their own, not another's.
func (m *matrix) nested(t *testing.T, res *resourceapi.Resource) {
	t.Helper()
	parent := res.ParentResource()
	selfKey, self := m.selfAccount()
	mine := m.target(res, self.UserID)
	theirs := m.target(res, m.other)
	parentOf := func(id int64) int64 {
		rec, err := m.admin.service.Get(context.Background(), resourceapi.SystemCaller(), res, resourceapi.Address{ID: id})
		if err != nil {
			t.Fatalf("get %s %d: %v", res.Singular, id, err)
		}
		return res.ParentOf(rec)
	}
	pMine, pTheirs := parentOf(mine), parentOf(theirs)
	base := func(p int64) string { return fmt.Sprintf("/api/%s/%d/%s", parent.Path, p, res.Path) }
	// belongs reports whether a list holds want and only records of parent.
	belongs := func(recs []map[string]any, parent, want int64) bool {
		found := false
		for _, rec := range recs {
			if fmt.Sprint(rec[res.Parent]) != strconv.FormatInt(parent, 10) {
				return false
			}
			found = found || idOf(t, rec) == want
		}
		return found
	}
	user := m.admin.as(selfKey)
	recs, _ := user.get(base(pMine) + "?limit=100").list(t)
	if !belongs(recs, pMine, mine) {
		t.Errorf("nested %s: a user's list under %d = %v, want only its records, with %d", res.Name, pMine, recs, mine)
	}
	user.get(fmt.Sprintf("%s/%d", base(pMine), mine)).mustStatus(t, http.StatusOK)
	if res.Access.Private && res.Parent == res.Access.Owner {
		user.get(base(pTheirs)).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
	}
	recs, _ = m.admin.get(base(pTheirs) + "?limit=100").list(t)
	if !belongs(recs, pTheirs, theirs) {
		t.Errorf("nested %s: an admin's list under %d = %v, want only its records, with %d", res.Name, pTheirs, recs, theirs)
	}
	if pMine != pTheirs {
		// Addressed under the wrong parent, a record does not exist.
		m.admin.get(fmt.Sprintf("%s/%d", base(pMine), theirs)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		m.admin.do("DELETE", fmt.Sprintf("%s/%d", base(pMine), theirs), "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	}
	// An absent parent is 404, for a list and for a create.
	body := m.example(res)
	delete(body, res.Parent)
	m.admin.get(base(resourceapi.MaxID)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	m.admin.post(base(resourceapi.MaxID), mustJSON(t, body)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	// A POST takes the parent from the path; a body that names another is
	// refused.
	other := m.example(res)
	other[res.Parent] = pMine
	if pMine != pTheirs {
		m.admin.post(base(pTheirs), mustJSON(t, other)).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
	}
	created := m.admin.post(base(pTheirs), mustJSON(t, body))
	created.mustStatus(t, http.StatusCreated)
	if got := created.object(t)[res.Parent]; fmt.Sprint(got) != strconv.FormatInt(pTheirs, 10) {
		t.Errorf("nested %s: POST under %d made %s = %v", res.Name, pTheirs, res.Parent, got)
	}
	if loc := created.Header.Get("Location"); loc != fmt.Sprintf("%s/%d", base(pTheirs), idOf(t, created.object(t))) {
		t.Errorf("nested %s: Location = %q", res.Name, loc)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
