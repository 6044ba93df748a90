// Package sqlite is the embedded store: resourceapi.Store on a SQLite file,
// through the pure-Go modernc.org/sqlite driver (no cgo, no server).
//
// The file runs in WAL mode. Reads go through a pool of read-only connections;
// every write goes through one writer connection, which groups the writes that
// arrive while it is busy into one transaction and one fsync (group commit),
// undoing a failed write alone with savepoints. So writers never see
// "database is locked", and an acknowledged write is on disk. A background
// write marked sqlstore.Beside (the webhook worker's) waits to join another
// write's transaction, so that it adds no fsync of its own.
//
// A SQLite file is served by one process: Open takes a lock on the file
// itself (see lockFile), whatever path reaches it, so that a second server
// on it fails at start, and Migrate takes the same lock.
// Several instances need PostgreSQL. Other processes may still write the file (the sqlite3 shell,
// the service's own commands): the store caches records and list pages, and
// finds such commits before every read of its cache (see watch), so that it
// never serves a record older than a commit that completed before the read
// began.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

//go:embed migrations/*.sql migrations/declared.json
var migrations embed.FS

// Sync is SQLite's synchronous setting for the WAL.
type Sync string

// Sync settings. SyncFull (the default) makes every acknowledged write
// survive power loss; SyncNormal only a crash of the process.
const (
	SyncFull   Sync = "FULL"
	SyncNormal Sync = "NORMAL"
)

// Options configure Open. The zero value is the durable default.
type Options struct {
	Sync Sync
	// Readers is the size of the read pool; 0 picks one from GOMAXPROCS.
	Readers int
	// Now is the store's clock; nil is time.Now.
	Now resourceapi.Clock
	// CacheRecords bounds the cache of records and list pages: at most that
	// many entries, of at most sqlstore.EntryBytes (2 KiB) each on average by
	// estimate (16384 entries: 32 MiB). 0 is 16384 and a negative value turns
	// the cache off.
	CacheRecords int
	// Beside opens the file for a short command (the command line) that may
	// run beside a server: when a server holds the file's lock, the command
	// neither takes it nor migrates (the server did), and fails if the
	// schema is not current; otherwise it takes the lock as Open always
	// does. The cache is off: the command is short, and the server notices
	// its writes.
	Beside bool
	// OnStatement, when set, is called with every statement the store runs
	// (sqlstore.Config.OnStatement): for tests that count statements.
	OnStatement func(query string)
	// Trace, when set, is told of every statement as it starts and ends
	// (sqlstore.Config.Trace): package tracing's spans.
	Trace func(ctx context.Context, query string) (context.Context, func(error))
	// Migrations, when set, are what Open applies instead of the released
	// migrations (Migrations): for a test that serves a resource of its own,
	// with the migration GenerateMigration writes for it added.
	Migrations fs.FS

	served bool // Beside, and a server holds the lock
}

// DB is a SQLite database. It implements resourceapi.Store.
type DB struct {
	*sqlstore.Store
	lock    io.Closer
	read    *sql.DB
	write   *sql.DB
	readers *readers
	writer  *groupWriter
	watch   *watch
}

// errInUse is lockFile's error when another process holds the lock.
var errInUse = errors.New("in use by another resourceapi process")

// Open opens (creating if needed) the SQLite file at path, brings its schema
// up to date and starts the writer. Close releases it.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	lock, err := lockPath(path)
	if opts.Beside {
		opts.CacheRecords = -1
		if errors.Is(err, errInUse) {
			lock, err, opts.served = nil, nil, true
		}
	}
	if errors.Is(err, errInUse) {
		return nil, fmt.Errorf("open sqlite: %s is %w (a server or a migration); a SQLite database is served by one process (several instances need PostgreSQL)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db, err := open(ctx, path, opts)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	db.lock = lock
	return db, nil
}

func open(ctx context.Context, path string, opts Options) (*DB, error) {
	sync := opts.Sync
	if sync == "" {
		sync = SyncFull
	}
	if sync != SyncFull && sync != SyncNormal {
		return nil, fmt.Errorf("open sqlite: synchronous must be FULL or NORMAL, not %q", sync)
	}
	write, err := sql.Open("sqlite", dsn(path, sync, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// One writer connection: SQLite allows one writer at a time anyway, and
	// queuing in Go is cheaper and fairer than retrying on SQLITE_BUSY.
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	migrateOrCheck := migrate
	if opts.served {
		migrateOrCheck = checkCurrent
	}
	fsys := opts.Migrations
	if fsys == nil {
		fsys = Migrations()
	}
	if err := migrateOrCheck(ctx, write, fsys); err != nil {
		write.Close()
		return nil, err
	}
	// Read before the writer pins the one write connection.
	ftsStmts, err := ftsSync(ctx, write)
	if err == nil && !opts.served {
		// What a migration or another process changed since the last
		// transaction of a server is indexed before the first search.
		err = runTx(ctx, write, ftsStmts)
	}
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}

	read, err := sql.Open("sqlite", dsn(path, sync, true))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	n := opts.Readers
	if n <= 0 {
		n = max(4, 2*runtime.GOMAXPROCS(0))
	}
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	read.SetConnMaxLifetime(0)
	read.SetConnMaxIdleTime(0)
	db := &DB{read: read, write: write}
	if db.readers, err = newReaders(ctx, read, n); err != nil {
		db.closeDBs()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	wc, err := newConn(ctx, write)
	if err != nil {
		db.readers.close()
		db.closeDBs()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	watch, err := newWatch(ctx, wc, path)
	if err != nil {
		wc.close()
		db.readers.close()
		db.closeDBs()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db.watch = watch
	db.writer = newGroupWriter(wc, watch, ftsStmts)

	cache := opts.CacheRecords
	if cache == 0 {
		cache = 16384
	}
	db.Store = sqlstore.New(sqlstore.Config{
		Reader: db.readers, Writer: db.writer, Dialect: dialect{}, Now: opts.Now,
		CacheRecords: cache, ForeignCommits: watch.commits, OnStatement: opts.OnStatement, Trace: opts.Trace,
	})
	return db, nil
}

// ftsSync returns the statements that bring every full-text index up to date
// from its pending table: for each <t>_fts_pending (filled by triggers on <t>),
// drop the index entries of the pending ids, index the current text of those
// that still exist, and clear the list. Run once per transaction, they make
// FTS5 write its index once per batch of writes instead of once per row.
func ftsSync(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE '%\_fts\_pending' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, strings.TrimSuffix(name, "_fts_pending"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var stmts []string
	for _, t := range tables {
		cols, err := columnNames(ctx, db, t+"_fts")
		if err != nil {
			return nil, err
		}
		list := strings.Join(cols, ", ")
		pending := "(SELECT id FROM " + t + "_fts_pending)"
		stmts = append(stmts,
			"DELETE FROM "+t+"_fts WHERE rowid IN "+pending,
			"INSERT INTO "+t+"_fts (rowid, "+list+") SELECT id, "+list+" FROM "+t+" WHERE id IN "+pending,
			"DELETE FROM "+t+"_fts_pending",
		)
	}
	return stmts, nil
}

// runTx runs stmts in one transaction.
func runTx(ctx context.Context, db *sql.DB, stmts []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return tx.Commit()
}

func columnNames(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("full-text table %s has no columns", table)
	}
	return cols, rows.Err()
}

// dsn returns the driver's connection string. Writers take the write lock at
// BEGIN (immediate), so a transaction never fails upgrading a read lock;
// readers are query-only, so a bug can never write through them.
func dsn(path string, sync Sync, readOnly bool) string {
	v := url.Values{}
	v.Add("_pragma", "busy_timeout(10000)")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "synchronous("+string(sync)+")")
	v.Add("_pragma", "foreign_keys(1)")
	// Statement journals (and any other temporary file) in memory: an
	// INSERT into a table with constraints or an FTS index opens one, and
	// on disk each of its pages cost a write(2) inside the writer's
	// transaction. They only ever undo a statement of a transaction under
	// way, so a crash loses nothing the WAL would have kept.
	v.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		v.Add("_pragma", "query_only(1)")
	} else {
		v.Set("_txlock", "immediate")
	}
	return "file:" + uriPath.Replace(path) + "?" + v.Encode()
}

// uriPath escapes what SQLite would read as other than a path in a file: URI
// (it decodes %HH): a path with # or ? (Go's t.TempDir for subtests named
// "x#01") must not open a file cut short at it.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// lockPath creates the directory of the SQLite file at path if needed and
// takes the file's lock (see lockFile). Closing the returned closer, which
// may be nil, releases it.
func lockPath(path string) (io.Closer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	return lockFile(path)
}

// Migrate brings the schema of the SQLite file at path (created, with its
// directory, if needed) up to date and returns. It holds the lock Open takes,
// so it fails while a server has the file open, and no server starts on the
// file until it has finished.
func Migrate(ctx context.Context, path string) error {
	lock, err := lockPath(path)
	if errors.Is(err, errInUse) {
		return fmt.Errorf("migrate sqlite: %s is %w; stop the server first (serve brings the schema up to date itself when it starts)", path, err)
	}
	if err != nil {
		return fmt.Errorf("migrate sqlite: %w", err)
	}
	if lock != nil {
		defer lock.Close()
	}
	if testHookMigrating != nil {
		testHookMigrating()
	}
	db, err := sql.Open("sqlite", dsn(path, SyncFull, false))
	if err != nil {
		return fmt.Errorf("migrate sqlite: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return migrate(ctx, db, Migrations())
}

// testHookMigrating, set only by tests, runs while Migrate holds the lock.
var testHookMigrating func()

func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	p, err := provider(db, fsys)
	if err != nil {
		return fmt.Errorf("migrate sqlite: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate sqlite: %w", err)
	}
	return nil
}

// checkCurrent fails unless the schema is up to date: a command opened
// beside a server must not migrate under it.
func checkCurrent(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	p, err := provider(db, fsys)
	if err != nil {
		return fmt.Errorf("open sqlite: %w", err)
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("open sqlite: %w", err)
	}
	if pending {
		return errors.New("open sqlite: the database's schema is older than this program's, and a server holds the file: upgrade the server first")
	}
	return nil
}

func provider(db *sql.DB, fsys fs.FS) (*goose.Provider, error) {
	return goose.NewProvider(goose.DialectSQLite3, db, fsys,
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goMigrations()...))
}

// WriteTransactions returns how many write transactions the store has
// committed since Open (each with a write that succeeded; with SyncFull,
// one fsync each, whatever number of writes it grouped): for tests and
// benchmarks that count them.
func (db *DB) WriteTransactions() int64 { return db.writer.commits.Load() }

// Close marks published the events the relay published since its last
// mark, stops the writer after the writes under way and closes the
// connections. No call of the store may be under way or follow.

func (db *DB) Close() error {
	flushErr := db.FlushEvents(context.Background())
	db.writer.close()
	db.watch.close()
	db.readers.close()
	err := errors.Join(flushErr, db.writer.conn.close(), db.closeDBs())
	if db.lock != nil {
		err = errors.Join(err, db.lock.Close())
	}
	return err
}

func (db *DB) closeDBs() error {
	return errors.Join(db.read.Close(), db.write.Close())
}

// GoMigrationVersions returns the versions of the store's migrations written
// in Go: a generated migration is numbered after them too.
func GoMigrationVersions() []int64 {
	var out []int64
	for _, m := range goMigrations() {
		out = append(out, m.Version)
	}
	return out
}

// goMigrations are the migrations in Go, beside the SQL ones in migrations/:
// data migrations that SQL cannot express the way the rule layer does.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(10, &goose.GoFunc{RunTx: sqlstore.NormalizeEmails(dialect{})}, nil),
	}
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the embedded directory is fixed at build time
	}
	return sub
}
