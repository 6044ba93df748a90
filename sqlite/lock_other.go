//go:build !unix

package sqlite

import "os"

// lockFile does nothing where flock is not available: one process per
// database file is then up to the operator.
func lockFile(string) (*os.File, error) { return nil, nil }
