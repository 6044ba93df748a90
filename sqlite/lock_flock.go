//go:build unix

package sqlite

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// flockPath creates the file at path if needed and takes an exclusive flock
// on it, held until the returned closer is closed. It fails with errInUse
// when another descriptor holds it.
func flockPath(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
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
