package sqlite

import (
	"context"
	"sync"
	"sync/atomic"
)

// watch finds the commits that other processes make to the database file
// (the sqlite3 shell, another resourceapi command), so that the store's cache
// never serves a record older than a commit that completed before the read
// began. It implements sqlstore.Config.ForeignCommits.
//
// The exact check is PRAGMA data_version on the writer's connection: its
// value changes exactly when another connection has committed, and this
// process commits through that connection only, so a change is a foreign
// commit. It costs about as much as a point query (it starts a read
// transaction), so reads avoid it:
//
//   - Every commit, of any process, rewrites the WAL-index header in
//     <file>-shm and increments its iChange. Each check records the header
//     it read just before the pragma (verified). A read that finds the
//     header still equal to it knows that nobody has committed since, and
//     that the pragma counted every commit before: a foreign commit after
//     that header was read either came before the pragma, which saw it, or
//     changed the header again.
//   - From BEGIN IMMEDIATE to COMMIT the writer holds the write lock, so no
//     one else can commit: once it has made sure, inside the transaction,
//     that every foreign commit is counted (the header is still the verified
//     one, or the pragma runs), reads need no check at all (locked). After
//     its commit, iChange one above the header read inside the transaction
//     means that no one else committed since: the new header is verified
//     with no query. So the store's own writes cost reads nothing.
//   - Otherwise the read runs the check itself, or uses one that began after
//     it arrived. Only when the writer is using its connection (it holds mu
//     for a whole transaction) does the read skip the cache and ask the
//     database, rather than wait for a commit.
//
// Without the header (the shm cannot be mapped, or it did not change when the
// store committed) every read that uses the cache runs the exact check.
type watch struct {
	// mu is held by whoever uses conn: the writer for each transaction, and
	// the exact check.
	mu   sync.Mutex
	conn *conn
	// version is data_version at the last check; under mu.
	version int64
	checked bool // version has been read once; under mu
	// foreign counts the changes of data_version seen.
	foreign atomic.Uint64
	// locked is set while the writer holds the write lock and has checked
	// since it took it.
	locked atomic.Bool
	// started and completed number the exact checks, which run one at a time
	// under mu: a check numbered above the count a read saw when it arrived
	// began after it.
	started, completed atomic.Uint64
	// readers serialises the exact checks that reads run, so that those that
	// queue behind one can use it.
	readers sync.Mutex
	// index is the WAL-index header, nil when it cannot be used.
	index *walIndex
	// verified is the header read just before the last check's pragma, or
	// after the writer's commit; nil when there is none to trust.
	verified atomic.Pointer[walHeader]
	// useIndex is cleared, for good, when the header misbehaves.
	useIndex atomic.Bool
	// began is the header begun read inside the writer's transaction, if
	// beganRead; under mu.
	began     walHeader
	beganRead bool
	// begunAt is a copy of began, published for reads from the writer's
	// ending of a transaction that wrote until its end (ended); nil
	// otherwise, or when the header could not be read. See ownCommit.
	begunAt atomic.Pointer[walHeader]
}

// newWatch watches the database at path, open in WAL mode, through c, the
// writer's connection.
func newWatch(ctx context.Context, c *conn, path string) (*watch, error) {
	w := &watch{conn: c}
	if idx, err := openWALIndex(path); err == nil {
		var h walHeader
		if idx.read(&h) && h.sane() {
			w.index = idx
			w.useIndex.Store(true)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// check runs the exact check. The caller holds mu.
func (w *watch) check(ctx context.Context) error {
	n := w.started.Add(1)
	var h walHeader
	read := w.useIndex.Load() && w.index.read(&h)
	var version int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		return err
	}
	if w.checked && version != w.version {
		w.foreign.Add(1)
	}
	w.version, w.checked = version, true
	if read {
		w.verified.Store(&h)
	} else {
		w.verified.Store(nil)
	}
	w.completed.Store(n)
	return nil
}

// commits implements sqlstore.Config.ForeignCommits.
func (w *watch) commits() (uint64, bool) {
	arrived := w.started.Load()
	if w.current() || w.ownCommit() {
		return w.foreign.Load(), true
	}
	w.readers.Lock()
	defer w.readers.Unlock()
	if w.completed.Load() > arrived || w.current() {
		return w.foreign.Load(), true
	}
	if !w.mu.TryLock() {
		return 0, false // the writer is in a transaction: ask the database
	}
	defer w.mu.Unlock()
	if err := w.check(context.Background()); err != nil {
		return 0, false // the read's own query will report the database's state
	}
	return w.foreign.Load(), true
}

// current reports whether no commit can have happened since the last check.
func (w *watch) current() bool {
	if w.locked.Load() {
		return true
	}
	v := w.verified.Load()
	if v == nil {
		return false
	}
	var h walHeader
	return w.index.read(&h) && h == *v
}

// ownCommit reports whether the header shows exactly one commit since the
// writer's transaction began (begunAt): its own. From BEGIN IMMEDIATE until
// its COMMIT has ended nobody else can commit, and each commit increments
// iChange, so a header one above began means that every foreign commit is
// counted, as committed would find once it runs. It lets reads use the cache
// in the window between the writer's COMMIT and committed (the rest of the
// COMMIT, a checkpoint included, and the transaction's AfterEnd functions),
// where they would otherwise skip it: under a steady stream of writes, one
// read in several.
func (w *watch) ownCommit() bool {
	b := w.begunAt.Load()
	if b == nil || !w.useIndex.Load() {
		return false
	}
	var h walHeader
	return w.index.read(&h) && h[walChange] == b[walChange]+1
}

// begun is called by the writer right after BEGIN IMMEDIATE, holding mu and
// the write lock. It makes sure that every foreign commit so far is counted:
// nothing to do if the header has not changed since the last check, the
// exact check otherwise. Until ending, reads need no check.
func (w *watch) begun(ctx context.Context) error {
	w.beganRead = w.useIndex.Load() && w.index.read(&w.began)
	if v := w.verified.Load(); !w.beganRead || v == nil || *v != w.began {
		if err := w.check(ctx); err != nil {
			return err
		}
	}
	w.begunAt.Store(nil)
	w.locked.Store(true)
	return nil
}

// ending is called before the writer commits or rolls back: from then on,
// others may commit. writes says that the writer is about to commit a
// transaction that changed the database: only then does its commit move
// iChange, and only then may reads take a header one above began for its
// commit (ownCommit). A rollback, or a commit that changed nothing, leaves
// iChange as it was, so the next commit to move it by one is another
// process's.
func (w *watch) ending(writes bool) {
	if writes && w.beganRead {
		b := w.began
		w.begunAt.Store(&b)
	} else {
		w.begunAt.Store(nil)
	}
	w.locked.Store(false)
}

// ended is called when the writer's transaction is over, after committed if
// it committed: the header began was read in no longer tells whose commit
// moved iChange.
func (w *watch) ended() { w.begunAt.Store(nil) }

// committed is called after the writer's own commit, still holding mu; wrote
// says whether the transaction changed the database. Nobody could commit
// between the header begun read and the commit, and every commit that
// changed the database increments iChange: if the transaction wrote and it
// is one more now, no one else has committed since, and the header is
// verified without a query (a transaction that wrote nothing left iChange
// as it was, so one more would be another process's commit). Otherwise the exact check runs, so
// that reads need not. A commit that wrote and left the header as it was
// means the header cannot be trusted: every read runs the exact check from
// then on.
func (w *watch) committed(ctx context.Context, wrote bool) error {
	if !w.useIndex.Load() {
		return nil // each read checks for itself
	}
	var h walHeader
	if w.beganRead && w.index.read(&h) {
		switch {
		case wrote && h[walChange] == w.began[walChange]+1:
			n := w.started.Add(1)
			w.verified.Store(&h)
			w.completed.Store(n)
			return nil
		case wrote && h == w.began:
			w.useIndex.Store(false)
			w.verified.Store(nil)
			return nil
		}
	}
	return w.check(ctx)
}

// close stops the use of the WAL index: reads then run the exact check. A
// read under way, or one that loaded verified just before, still holds the
// index and reads mapped memory; the mapping goes when the last reference
// to the index does (see walIndex). The field is left as it is: clearing it
// would be a write that such a read's load races with.
func (w *watch) close() {
	w.useIndex.Store(false)
	w.verified.Store(nil)
}
