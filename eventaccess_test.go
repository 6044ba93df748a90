package resourceapi_test

import (
	"testing"

	"github.com/resourceapi/resourceapi"
)

func TestEventFor(t *testing.T) {
	svc := resourceapi.NewService(nil, nil)
	roles := resourceapi.DefaultRoles()
	admin := resourceapi.NewCaller(1, "admin", []string{resourceapi.RoleAdmin}, roles)
	ann := resourceapi.NewCaller(5, "ann", []string{resourceapi.RoleUser}, roles)
	bob := resourceapi.NewCaller(6, "bob", []string{resourceapi.RoleUser}, roles)
	nobody := resourceapi.NewCaller(7, "nobody", nil, roles) // no permission at all
	ev := func(res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Event {
		return resourceapi.Event{ID: 1, Name: resourceapi.EventType(res, resourceapi.EventCreated), Resource: res.Name, Record: rec}
	}
	annsOrder := ev(resourceapi.Orders, resourceapi.Record{"id": int64(3), "user_id": int64(5)})
	user7 := ev(resourceapi.Users, resourceapi.Record{"id": int64(7), "name": "Nobody"})
	product := ev(resourceapi.Products, resourceapi.Record{"id": int64(2), "name": "Widget"})
	unknown := resourceapi.Event{ID: 2, Name: "gadgets.created", Resource: "gadgets"}
	for _, c := range []struct {
		name   string
		caller *resourceapi.Caller
		ev     resourceapi.Event
		want   bool
	}{
		{"an order to its owner", ann, annsOrder, true},
		{"an order to an admin", admin, annsOrder, true},
		{"an order to another user", bob, annsOrder, false},
		{"an order to no caller", nil, annsOrder, false},
		{"a user to users:read", bob, user7, true},
		{"a user to themself without users:read", nobody, user7, true},
		{"another user without users:read", nobody, ev(resourceapi.Users, resourceapi.Record{"id": int64(5)}), false},
		{"a product to users", ann, product, true},
		{"a product without products:read", nobody, product, false},
		{"an unknown resource to a user", ann, unknown, false},
		{"an unknown resource to an admin", admin, unknown, true},
	} {
		got, ok := svc.EventFor(c.caller, c.ev)
		if ok != c.want {
			t.Errorf("%s: EventFor = %v, want %v", c.name, ok, c.want)
		}
		if ok && got.ID != c.ev.ID {
			t.Errorf("%s: EventFor returned event %d, want %d", c.name, got.ID, c.ev.ID)
		}
	}
}

func TestEventOf(t *testing.T) {
	users := resourceapi.Users
	live, gone := resourceapi.Record{"deleted": false}, resourceapi.Record{"deleted": true}
	for _, c := range []struct {
		op            resourceapi.Op
		before, after resourceapi.Record
		name, alias   string
	}{
		{resourceapi.OpCreate, nil, live, "users.created", "userCreated"},
		{resourceapi.OpUpdate, live, live, "users.updated", ""},
		{resourceapi.OpReplace, live, live, "users.updated", ""},
		{resourceapi.OpUpdate, live, gone, "users.deleted", ""},
		{resourceapi.OpReplace, gone, live, "users.created", ""},
		{resourceapi.OpUpdate, gone, gone, "users.updated", ""},
		{resourceapi.OpDelete, live, nil, "users.deleted", ""},
	} {
		name, alias := users.EventOf(c.op, c.before, c.after)
		if name != c.name || alias != c.alias {
			t.Errorf("EventOf(%v, %v, %v) = %q, %q; want %q, %q", c.op, c.before, c.after, name, alias, c.name, c.alias)
		}
	}
	if got := len(resourceapi.EventTypes()); got != 3*len(resourceapi.Declared()) {
		t.Errorf("EventTypes() has %d types, want 3 per resource", got)
	}
}
