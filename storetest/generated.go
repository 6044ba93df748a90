package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// Generated migrations: a store's tests declare a resource that no release
// has, generate its migration, apply it over the released ones and check the
// result with CheckGenerated.

// Gadgets returns the declaration of a resource that the root package does
// not declare, made to exercise every part of a generated migration: a field
// of every type, nullable and NOT NULL ones, ranges and enums, defaults, a
// unique string, a secret that decides access, an owner and another
// reference, items that reference a product, sortable and searchable fields,
// an equality and a list filter, a soft delete and default grants.
func Gadgets() *resourceapi.Resource { return resourceapi.NewResource(gadgets(false)) }

// GadgetsChanged returns Gadgets as a later change of its declaration makes
// it, which a generated migration can follow without touching data: a new
// nullable unique field, a new NOT NULL field with a default, an existing
// field made sortable and another searchable, a new value of the list
// filter, a new default grant.
func GadgetsChanged() *resourceapi.Resource { return resourceapi.NewResource(gadgets(true)) }

func gadgets(changed bool) resourceapi.Resource {
	r := resourceapi.Resource{
		Name:       "gadgets",
		Singular:   "gadget",
		SoftDelete: "retired",
		Fields: []resourceapi.Field{
			{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true, Sortable: true},
			{Name: "owner_id", Type: resourceapi.TypeInt, References: "users"},
			{Name: "maker_id", Type: resourceapi.TypeInt, Nullable: true, References: "users"},
			{Name: "name", Type: resourceapi.TypeString, Required: true, Unique: true, Sortable: true, Searchable: true, Length: &resourceapi.Range{Min: 1, Max: 100}},
			{Name: "note", Type: resourceapi.TypeString, Nullable: true, Sortable: true, Searchable: true},
			{Name: "size", Type: resourceapi.TypeInt, Nullable: true, Sortable: true, Range: &resourceapi.Range{Min: 0, Max: 1000}},
			{Name: "weight", Type: resourceapi.TypeInt, Required: true, Range: &resourceapi.Range{Min: 0, Max: 1 << 40}},
			{Name: "color", Type: resourceapi.TypeString, Enum: []string{"red", "green", "blue"}, Default: func() any { return "red" }},
			{Name: "tags", Type: resourceapi.TypeStrings, Default: func() any { return []string{} }},
			{Name: "released_at", Type: resourceapi.TypeTime, Nullable: true, Sortable: true},
			{Name: "token", Type: resourceapi.TypeString, WriteOnly: true, Nullable: true, Secret: resourceapi.SecretToken, DecidesAccess: true},
			{Name: "parts", Type: resourceapi.TypeItems, Items: &resourceapi.Items{
				Table: "gadget_parts", Key: "gadget_id", Max: 10,
				Fields: []resourceapi.Field{
					{Name: "product_id", Type: resourceapi.TypeInt, Required: true, References: "products", Restrict: true},
					{Name: "count", Type: resourceapi.TypeInt, Required: true, Range: &resourceapi.Range{Min: 1, Max: 100}},
					{Name: "label", Type: resourceapi.TypeString, Nullable: true},
					{Name: "spare", Type: resourceapi.TypeBool, Default: func() any { return false }},
				},
			}},
			{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
			{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
			{Name: "retired", Type: resourceapi.TypeBool, Keep: true, Default: func() any { return false }},
		},
		Filters: []resourceapi.Filter{
			{Param: "status", Kind: resourceapi.FilterSoftDelete, Values: []string{resourceapi.StatusActive, resourceapi.StatusDeleted, resourceapi.StatusAll}, Default: resourceapi.StatusActive},
			{Param: "color", Kind: resourceapi.FilterEqual, Field: "color", Values: []string{"red", "green", "blue"}},
			{Param: "tag", Kind: resourceapi.FilterContains, Field: "tags", Values: []string{"new", "sale"}},
		},
		Access: resourceapi.Access{Owner: "owner_id", Grants: map[string][]resourceapi.Action{
			resourceapi.RoleUser:   {resourceapi.ActionRead},
			resourceapi.RoleEditor: {resourceapi.ActionWrite},
		}},
	}
	if !changed {
		return r
	}
	field := func(name string) *resourceapi.Field {
		i := slices.IndexFunc(r.Fields, func(f resourceapi.Field) bool { return f.Name == name })
		return &r.Fields[i]
	}
	field("weight").Sortable = true
	field("color").Searchable = true
	r.Fields = slices.Insert(r.Fields, len(r.Fields)-3,
		resourceapi.Field{Name: "serial", Type: resourceapi.TypeString, Nullable: true, Unique: true, Sortable: true},
		resourceapi.Field{Name: "rank", Type: resourceapi.TypeInt, Range: &resourceapi.Range{Min: 0, Max: 10}, Default: func() any { return int64(3) }},
	)
	r.Filters[2].Values = append(r.Filters[2].Values, "clearance")
	r.Access.Grants = map[string][]resourceapi.Action{
		resourceapi.RoleUser:   {resourceapi.ActionRead, resourceapi.ActionWrite},
		resourceapi.RoleEditor: {resourceapi.ActionDelete},
	}
	return r
}

// Widgets returns stage n (0, 1 or 2) of the declaration of another
// resource that the root package does not declare, for the changes Gadgets
// does not make. At 1 a field becomes searchable (a search index for a
// table that had none, which must index the records already there), a new
// secret decides access (what moves the identity version, for an existing
// table) and a new items field has a table of its own; at 2 the field is
// searchable no more and the secret no longer decides access (the search
// index and those triggers go).
func Widgets(stage int) *resourceapi.Resource {
	r := resourceapi.Resource{
		Name:     "widgets",
		Singular: "widget",
		Fields: []resourceapi.Field{
			{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true, Sortable: true},
			{Name: "owner_id", Type: resourceapi.TypeInt, References: "users"},
			{Name: "label", Type: resourceapi.TypeString, Nullable: true},
			{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
			{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
		},
		Access: resourceapi.Access{Owner: "owner_id"},
	}
	if stage >= 1 {
		r.Fields[2].Searchable = stage == 1
		r.Fields = append(r.Fields,
			resourceapi.Field{Name: "key", Type: resourceapi.TypeString, WriteOnly: true, Nullable: true, Secret: resourceapi.SecretToken, DecidesAccess: stage == 1},
			resourceapi.Field{Name: "bits", Type: resourceapi.TypeItems, Items: &resourceapi.Items{
				Table: "widget_bits", Key: "widget_id", Max: 5,
				Fields: []resourceapi.Field{{Name: "gadget_size", Type: resourceapi.TypeInt, Required: true}},
			}},
		)
	}
	return resourceapi.NewResource(r)
}

// CheckSchemaOf checks, as CheckSchema does, the declaration of res (one
// the root package does not declare) and every declared resource against
// the schema of db.
func CheckSchemaOf(t *testing.T, db *sql.DB, in Introspection, res *resourceapi.Resource) {
	t.Helper()
	for _, r := range append(resourceapi.Declared(), res) {
		problems, err := SchemaProblems(timeout(t), db, in, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("schema: %s", p)
		}
	}
}

// CheckGenerated checks a database that the released migrations and
// migrations generated for res (one of Gadgets, GadgetsChanged) made: db
// reads it, in, as for CheckSchema, and store is the store open on it.
//
//   - SchemaProblems finds nothing wrong with res, nor with any declared
//     resource;
//   - the roles grant res's default grants besides their own;
//   - the store keeps res's records as it keeps those of the released
//     resources: a record with items is read back whole, q finds it (the
//     search index and what keeps it current), unfiltered totals count it
//     by soft-delete state (the count triggers), and the list filter finds
//     it.
func CheckGenerated(t *testing.T, db *sql.DB, in Introspection, store resourceapi.Store, res *resourceapi.Resource) {
	t.Helper()
	CheckSchemaOf(t, db, in, res)

	roles, err := Roles(timeout(t), db)
	if err != nil {
		t.Fatal(err)
	}
	for role, perms := range resourceapi.DefaultRoles() {
		for _, p := range append(perms, res.DefaultGrants()[role]...) {
			if !slices.Contains(roles[role], p) {
				t.Errorf("role %s: permissions %v lack %s", role, roles[role], p)
			}
		}
	}

	owner := mustCreate(t, store, user("Gadget Owner", strings.ToLower(rand.Text())+"@example.com"))
	product, err := store.Create(timeout(t), resourceapi.Products, mustValidOf(t, resourceapi.Products,
		resourceapi.Record{"name": "Mill", "price_cents": int64(100)}))
	if err != nil {
		t.Fatalf("Create(product) = %v", err)
	}
	rec := mustValidOf(t, res, resourceapi.Record{
		"owner_id": owner.ID(), "name": "Difference Engine", "weight": int64(1 << 35), "tags": []string{"sale"},
		"parts": []resourceapi.Record{
			{"product_id": product.ID(), "count": int64(2)},
			{"product_id": product.ID(), "count": int64(1), "label": "spare wheel", "spare": true},
		},
	})
	rec["token"] = resourceapi.HashToken("gadget token") // a secret is stored as its hash
	var created resourceapi.Record
	// Totals are compared with those before the record was created: the
	// database may hold records of res already.
	total := func(params string) int {
		t.Helper()
		q, _ := url.ParseQuery(params)
		lq, err := rhttp.ParseListQuery(res, q)
		if err != nil {
			t.Fatalf("ParseListQuery(%s) = %v", params, err)
		}
		page, err := store.List(timeout(t), res, lq)
		if err != nil {
			t.Fatalf("List(%s) = %v", params, err)
		}
		return page.Total
	}
	stages := []struct {
		what  string
		write func() error
		more  map[string]int // total of each query minus the total before
	}{
		{"created", func() (err error) { created, err = store.Create(timeout(t), res, rec); return err }, map[string]int{
			"": 1, "status=deleted": 0, "q=ENGINE": 1, "q=ifference": 1, "q=Babbage": 0, "tag=sale": 1, "tag=new": 0, "color=red": 1,
		}},
		{"renamed and retired", func() error {
			_, err := store.Update(timeout(t), res, created.ID(), resourceapi.Record{"name": "Analytical Engine", "retired": true}, nil)
			return err
		}, map[string]int{
			"": 0, "status=deleted": 1, "status=all": 1, "status=all&q=analytical": 1, "status=all&q=difference": 0,
		}},
		{"deleted", func() error { return store.Delete(timeout(t), res, created.ID(), nil) }, map[string]int{
			"status=all": 0, "status=all&q=analytical": 0,
		}},
	}
	before := map[string]int{}
	for _, st := range stages {
		for params := range st.more {
			before[params] = total(params)
		}
	}
	for _, st := range stages {
		if err := st.write(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		for params, more := range st.more {
			if got, want := total(params), before[params]+more; got != want {
				t.Errorf("%s: total of ?%s = %d, want %d", st.what, params, got, want)
			}
		}
		if st.what == "created" {
			got, err := store.Get(timeout(t), res, created.ID())
			if err != nil {
				t.Fatalf("Get(%s) = %v", res.Name, err)
			}
			if parts, _ := got["parts"].([]resourceapi.Record); len(parts) != 2 || parts[1]["label"] != "spare wheel" || parts[1]["spare"] != true {
				t.Errorf("parts = %v, want the two written", got["parts"])
			}
			if got["color"] != "red" || got["retired"] != false {
				t.Errorf("color, retired = %v, %v; want the defaults red, false", got["color"], got["retired"])
			}
		}
	}
}

// Roles reads the roles table of db: the permissions of each role.
func Roles(ctx context.Context, db *sql.DB) (map[string][]resourceapi.Permission, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, CAST(permissions AS TEXT) FROM roles")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	roles := map[string][]resourceapi.Permission{}
	for rows.Next() {
		var name, perms string
		if err := rows.Scan(&name, &perms); err != nil {
			return nil, err
		}
		var list []resourceapi.Permission
		if err := json.Unmarshal([]byte(perms), &list); err != nil {
			return nil, fmt.Errorf("role %s: %w", name, err)
		}
		roles[name] = list
	}
	return roles, rows.Err()
}

// roleProblems compares the roles of db with resourceapi.DefaultRoles, as
// sets.
func roleProblems(ctx context.Context, db *sql.DB) ([]string, error) {
	got, err := Roles(ctx, db)
	if err != nil {
		return nil, err
	}
	var problems []string
	want := resourceapi.DefaultRoles()
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		problems = append(problems, fmt.Sprintf("roles %v, want %v", g, w))
	}
	for role, perms := range want {
		if g, w := slices.Sorted(slices.Values(got[role])), slices.Sorted(slices.Values(perms)); !slices.Equal(g, w) {
			problems = append(problems, fmt.Sprintf("role %s grants %v, want the default grants of the declarations, %v", role, g, w))
		}
	}
	return problems, nil
}
