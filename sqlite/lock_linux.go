package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockOffset is the byte of the database file that the lock covers: far
// above any byte SQLite locks (its lock bytes start at 1 GiB: the pending
// byte, the reserved byte and the shared range) and above any size a
// database reaches, so the lock never meets SQLite's own. Locks may lie
// beyond the end of a file.
const lockOffset = 1 << 62

// lockFile takes the lock that makes one server own the SQLite file at path,
// for as long as the returned file stays open, so that a second server on
// the same file fails at start instead of writing it beside the first one
// (whose cache and group-commit writer assume they are alone: two writers
// left the file malformed and lost acknowledged writes), and so that a
// server and a migration never run on the file at once. It fails with
// errInUse when another holds the lock.
//
// The lock is on the database file itself, so every path to the file (a
// hard link, a symbolic link, dir/x/../db) meets it: a lock on a file named
// after the path (path+".lock") let two servers share one database reached
// by two names. It is an open file description lock (F_OFD_SETLK) on a
// descriptor of its own, on one byte SQLite never locks:
//   - not flock on the database file: on NFS (and on BSDs, where flock and
//     fcntl locks are one kind) a flock is a lock of the whole file, which
//     SQLite's own byte-range locks in this process would conflict with;
//   - not a classic POSIX (F_SETLK) lock: those belong to the process, so
//     SQLite's locks on the same file would merge with it, and closing any
//     descriptor of the file (SQLite closes one with each connection)
//     would release it. An OFD lock belongs to the descriptor that took it,
//     conflicts with any other descriptor's (in this process too, so two
//     stores in one process conflict as two processes do), and the kernel
//     drops it when the descriptor closes or the process dies, however.
//
// It also takes path+".lock", the lock earlier versions took, so that a
// server of an earlier version and this one never run on the file at once.
func lockFile(path string) (io.Closer, error) {
	legacy, err := flockPath(path + ".lock")
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		legacy.Close()
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: lockOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		legacy.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, errInUse
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return lockedFile{f, legacy}, nil
}

// lockedFile holds both locks; Close releases them.
type lockedFile struct{ file, legacy io.Closer }

func (l lockedFile) Close() error { return errors.Join(l.file.Close(), l.legacy.Close()) }
