// Package postgres is the production store: resourceapi.Store on PostgreSQL,
// through pgx's own pool and protocol. Several stateless instances can share one
// database: invariants that need a consistent view take advisory locks, and
// migrations take a session lock so that instances starting together migrate
// once.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

//go:embed migrations/*.sql migrations/declared.json
var migrations embed.FS

// Options configure Open.
type Options struct {
	// MaxConns bounds the connections the store opens; 0 takes the URL's
	// pool_max_conns, or else 8 per GOMAXPROCS. Writes may use all of
	// them, reads half (see split).
	MaxConns int
	// Now is the store's clock; nil is time.Now.
	Now resourceapi.Clock
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
	// Logger receives a warning when the database stops answering, once per
	// outage, and a line when it answers again; nil discards them. Requests
	// meanwhile are answered 503 UNAVAILABLE.
	Logger *slog.Logger
	// Solo turns on the record cache while this instance is provably the
	// only writer of the database (solo.go): it registers on a connection
	// of its own, becomes the holder when no other instance is registered
	// and no foreign write is in flight, and yields to the first writer or
	// instance that waits for it. Off, every read is a round trip.
	Solo bool
	// CacheRecords bounds the record cache of Solo, as sqlite.Options'
	// does: 0 is 16384 entries.
	CacheRecords int
}

// cancelGrace is how long a statement whose context ended may take to
// answer the cancel request before its connection is abandoned.
const cancelGrace = 5 * time.Second

// DB is a PostgreSQL database. It implements resourceapi.Store.
type DB struct {
	*sqlstore.Store
	pool  *pgxpool.Pool
	rw    *pool     // the store's Reader and Writer on pool
	batch *rowBatch // nil with fewer than 4 connections
	solo  *solo
}

// Open connects to the database at url (postgres://...), brings its schema up
// to date and returns the store. Close releases it.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	// A statement whose context ends (a deadline: callers hanging up do not
	// reach the driver, see sqlstore.Detach) is cancelled by a cancel request
	// and its connection kept, where pgx's default abandons the connection.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	conns := opts.MaxConns
	switch {
	case conns > 0:
	case strings.Contains(url, "pool_max_conns="):
		conns = int(cfg.MaxConns) // the URL's, which pgxpool read
	default:
		conns = 8 * runtime.GOMAXPROCS(0)
	}
	batchConns, readSlots := split(conns)
	cfg.MaxConns = int32(conns)
	// database/sql kept its connections for as long as they worked; so
	// does the store: a new session costs PostgreSQL a process and cold
	// caches.
	cfg.MaxConnLifetime, cfg.MaxConnIdleTime = 0, 0
	var so *solo
	if opts.Solo {
		so = &solo{id: newInstanceID(), base: time.Now(), log: opts.Logger}
		if so.log == nil {
			so.log = slog.New(slog.DiscardHandler)
		}
		if cfg.ConnConfig.RuntimeParams == nil {
			cfg.ConnConfig.RuntimeParams = map[string]string{}
		}
		// The pool's connections name the instance, so that solo_guard
		// knows its writes (no round trip: a startup parameter).
		cfg.ConnConfig.RuntimeParams[instanceParam] = instanceString(so.id)
		connCfg := cfg.ConnConfig.Copy()
		connCfg.RuntimeParams["application_name"] = "resourceapi solo"
		so.connect = func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.ConnectConfig(ctx, connCfg.Copy())
		}
	}
	// The batch of one-row reads (rowbatch.go) has connections of its own,
	// taken from the pool's size (split).
	var batchPool *pgxpool.Pool
	if n := batchConns; n > 0 {
		bcfg := cfg.Copy()
		bcfg.MaxConns, cfg.MaxConns = int32(n), int32(conns-n)
		if batchPool, err = pgxpool.NewWithConfig(ctx, bcfg); err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
	}
	pgxPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		if batchPool != nil {
			batchPool.Close()
		}
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	closePools := func() {
		pgxPool.Close()
		if batchPool != nil {
			batchPool.Close()
		}
	}
	if err := pgxPool.Ping(ctx); err != nil {
		closePools()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	fsys := opts.Migrations
	if fsys == nil {
		fsys = Migrations()
	}
	// goose runs on database/sql: a handle over the same pool, for the
	// migrations only.
	sqlDB := stdlib.OpenDBFromPool(pgxPool)
	err = migrate(ctx, sqlDB, fsys)
	sqlDB.Close()
	if err != nil {
		closePools()
		return nil, err
	}
	p := &pool{pool: pgxPool, slots: make(chan struct{}, cfg.MaxConns), reads: make(chan struct{}, readSlots)}
	scfg := sqlstore.Config{
		Reader: p, Writer: p, Dialect: dialect{}, Now: opts.Now,
		OnStatement: opts.OnStatement, Trace: opts.Trace, Logger: opts.Logger,
	}
	if so != nil {
		// Registered before the first read: from here on, no other
		// instance becomes the holder while this one lives.
		if err := so.register(ctx); err != nil {
			closePools()
			return nil, fmt.Errorf("open postgres: register: %w", err)
		}
		scfg.CacheRecords, scfg.ForeignCommits = opts.CacheRecords, so.commits
		if scfg.CacheRecords <= 0 {
			scfg.CacheRecords = 16384
		}
		so.start()
	}
	if batchPool != nil {
		p.batch = newRowBatch(batchPool) // last: its senders stop with DB.Close
	}
	return &DB{Store: sqlstore.New(scfg), pool: pgxPool, rw: p, batch: p.batch, solo: so}, nil
}

// split divides conns, the most connections the store opens, between the
// batch of one-row reads (rowbatch.go: batch, connections of its own) and
// the pool, and caps the pool's reads (readSlots); writes may take every
// connection of the pool. Reads get half of conns, a quarter of that half
// for the batch (at least one from 4 connections on), so that the default
// (8 per core) gives reads what they had when it was 4 per core: on 2
// cores, 2 for the batch and 6 for lists and searches, and writes 14.
// With 64 writers, 16 connections gave 16 to 58% more writes a second
// than 8; with searches, 31 to 42% fewer (more CPU-bound statements at
// once on the server's cores), and with half the pool for the batch,
// lists and searches lost half theirs (docs/performance.md).
func split(conns int) (batch, readSlots int) {
	reads := max(1, conns/2)
	batch = reads / 4
	if batch == 0 && conns >= 4 {
		batch = 1
	}
	return batch, max(1, reads-batch)
}

// Holding reports whether the store serves reads from its record cache
// now: Options.Solo, and this instance is the holder (solo.go).
func (db *DB) Holding() bool {
	return db.solo != nil && db.solo.serving()
}

// Migrate brings the schema of the database at url up to date and returns.
func Migrate(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	defer db.Close()
	return migrate(ctx, db, Migrations())
}

func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	return nil
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

// Close closes the connection pool.
func (db *DB) Close() error {
	if db.solo != nil {
		db.solo.close()
	}
	db.pool.Close()
	if db.batch != nil {
		db.batch.close()
	}
	return nil
}
