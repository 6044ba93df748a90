//go:build benchnoauth

package http

import "github.com/resourceapi/resourceapi"

// A benchnoauth binary serves a request without a credential as an admin of
// user 1, the first admin: the baseline bench/auth.sh measures the
// credentialed requests against. Never deploy one.
func init() {
	benchAnonymous = resourceapi.NewCaller(1, "bench", []string{resourceapi.RoleAdmin}, resourceapi.DefaultRoles())
}
