//go:build !unix

package sqlite

import "io"

// lockFile does nothing where flock is not available: one process per
// database file is then up to the operator.
func lockFile(string) (io.Closer, error) { return nil, nil }
