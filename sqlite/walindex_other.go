//go:build !unix

package sqlite

import "errors"

// openWALIndex fails where the -shm cannot be mapped with syscall.Mmap: the
// store then runs the exact check for every read of its cache.
func openWALIndex(string) (*walIndex, error) {
	return nil, errors.New("the WAL index is not mapped on this platform")
}
