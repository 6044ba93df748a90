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
