//go:build unix && !linux

package sqlite

import "io"

// lockFile takes an exclusive flock on path+".lock" for as long as the
// returned closer stays open, so that a second server started with the same
// path fails at start (see the Linux lockFile). These systems have no open
// file description locks, and a lock of the database file itself would
// conflict with SQLite's own, so a second server that reaches the same file
// by another path (a hard or symbolic link) is not detected here: one
// server per file is then up to the operator.
func lockFile(path string) (io.Closer, error) { return flockPath(path + ".lock") }
