//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path+".lock" for as long as the
// returned file stays open, so that a second server on the same database file
// fails at start instead of serving from a cache the first one's writes make
// stale. The kernel drops the lock when the process dies, however it dies.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another resourceapi process; a SQLite database is served by one process (several instances need PostgreSQL)", path)
		}
		return nil, err
	}
	return f, nil
}
