//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path+".lock" for as long as the
// returned file stays open, so that a second server on the same database file
// fails at start instead of serving from a cache the first one's writes make
// stale, and so that a server and a migration never run on the file at once.
// It fails with errInUse when another process holds the lock. The kernel drops
// the lock when the process dies, however it dies.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errInUse
		}
		return nil, err
	}
	return f, nil
}
