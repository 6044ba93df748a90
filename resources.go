package resourceapi

import "slices"

// declared lists every resource the service serves, in the order they are
// routed and documented. It is the one place a resource is named: routes,
// permissions, references and the schema checks derive from it.
//
// It is set in init rather than in its declaration because declarations
// refer back to it (a user's permissions must name declared resources), which
// Go's initialization order cannot resolve.
var declared []*Resource

func init() {
	declared = []*Resource{Users, Posts, Products, Reviews, Orders, Articles, Comments, APIKeys, OAuthClients}
}

// Declared returns every resource the service serves.
func Declared() []*Resource { return slices.Clone(declared) }

// ResourceNamed returns the declared resource with the given name, or nil.
func ResourceNamed(name string) *Resource {
	for _, r := range declared {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// ResourceNames returns the resource part of every valid permission: the
// declared resources' names.
func ResourceNames() []string {
	names := make([]string, 0, len(declared))
	for _, r := range declared {
		names = append(names, r.Name)
	}
	return names
}

// Declare adds res to the declared resources, after the root package's, and
// returns the function that removes it again: for a program or a test that
// serves a resource of its own, which every door then serves as it serves
// the root package's (routes, OpenAPI, permissions, events; the store needs
// its migration, which sqlite.GenerateMigration and postgres.GenerateMigration
// write, in Options.Migrations). Call it before anything reads the
// declarations (before a store opens or a server starts), never while they
// are read: the list is not guarded. It panics if a resource of that name
// is declared already.
func Declare(res *Resource) (undo func()) {
	if ResourceNamed(res.Name) != nil {
		panic("resourceapi: resource " + res.Name + " is declared already")
	}
	declared = append(slices.Clip(declared), res)
	return func() {
		declared = slices.DeleteFunc(slices.Clone(declared), func(r *Resource) bool { return r == res })
	}
}
