//go:build unix

package sqlite

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// openWALIndex maps the WAL-index headers of the database at path, which must
// be open in WAL mode (so that its -shm exists and keeps its size).
func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < int64(2*walHeaderSize) {
		return nil, fmt.Errorf("%s: %d bytes, too short for the WAL-index header", f.Name(), fi.Size())
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*walHeaderSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	x := &walIndex{mem: mem}
	// Unmapped once nothing can reach x: a read that holds x (read keeps
	// it alive to its end) never touches memory that is gone, whatever
	// order Close and the reads of other goroutines come in.
	runtime.AddCleanup(x, func(mem []byte) { syscall.Munmap(mem) }, mem)
	return x, nil
}
