package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Solo: the record cache on PostgreSQL while this instance is provably the
// only writer of the database.
//
// Several instances, the command line and psql may write one database, so
// a cache in one process cannot see the others' commits, and every read is
// a round trip. But most deployments run one instance. An instance that can
// prove that nobody else writes serves reads from the record cache
// (sqlstore's, as on SQLite), and stops before anybody else can commit.
//
// The proof rests on two advisory locks, a sequence and a trigger
// (migration 00031):
//
//   - The solo lock (soloKey). Every instance holds it shared, at session
//     level, on a connection of its own, the registration connection R, for
//     as long as it lives. An instance becomes the holder when, on R,
//     pg_try_advisory_lock(soloKey) (exclusive) succeeds: a session does
//     not conflict with itself, so it succeeds exactly when no other
//     session holds the lock in any mode, that is, no other instance is
//     registered and no foreign write is in flight (below).
//   - The sequence solo_holder holds the holder's instance id (0: none).
//     Each instance's pool connections carry its id as the startup
//     parameter resourceapi.instance (no round trip).
//   - solo_guard, a BEFORE ... FOR EACH STATEMENT trigger on every table the
//     cache or the accounts depend on. A writer that is not the holder
//     (psql, the command line, another instance) takes the solo lock shared
//     for the rest of its transaction: while a holder holds it exclusively
//     the writer waits, and from the moment it has it until its
//     transaction ends no instance can become the holder. The holder's own
//     writes, which its cache sees (they go through its Store, which drops
//     what they change before they commit), do not wait: they take the
//     holder-writes lock (ownKey) shared instead, and only after proving
//     that the exclusive holder of the solo lock is their own instance (the
//     shared try fails and solo_holder, read after it, is their id).
//   - The holder polls R every soloPoll: a waiter on the solo lock
//     (a registration, a foreign writer) makes it yield: it stops serving
//     from the cache first, sets solo_holder to 0, and only then releases
//     its exclusive lock (its shared registration stays, so that it cannot
//     become the holder again while the new instance lives). It tries
//     again every soloRetry.
//
// Becoming the holder, on R: take the solo lock exclusively (try); read
// solo_holder: another id there is a holder whose R was lost while its
// process may still serve until its lease ends, so wait 2*soloLease (still
// holding the lock) and set it to 0; take the holder-writes lock
// exclusively and release it (try: failing, give up for now), which proves
// that no write of an earlier holder that skipped the solo lock is still
// in flight; set solo_holder to this id; then count a new generation and
// serve. A read of the cache consults commits (sqlstore's ForeignCommits)
// first, which answers ok only while the instance is the holder and its
// lease runs: until soloLease after the start of the last poll that
// succeeded (R alive means the lock is held).
//
// Why no reader is served the state before a foreign commit: let W be a
// commit made by anyone but the holder X's Store, while X serves (between
// its generation's start and its yield or its lease's end).
//
//   - W took the solo lock shared (the trigger's general path). It cannot
//     have it while X holds it exclusively; had it before X took it, X's
//     try would have failed until W ended. So W ran after X released it,
//     which X does only after it stopped serving; or after X's R was lost,
//     and then W found X's id in solo_holder (set before X served, cleared
//     by X only when it yields cleanly) and waited 2*soloLease first: X
//     stopped serving within soloLease of the loss.
//   - W skipped it (the holder's path): W took the holder-writes lock, then
//     found the solo lock held exclusively and solo_holder equal to its own
//     instance id Y. If Y = X, W is X's own write. Otherwise X set
//     solo_holder to X only after its drain of the holder-writes lock, and
//     between its exclusive lock and that, solo_holder was 0 (X cleared
//     any other); so W read Y before X's drain began, held the
//     holder-writes lock since, and X's drain could not succeed until W
//     ended.
//
// solo_holder is a sequence so that these reads see its current value in
// any isolation level; the holder's path is taken only in READ COMMITTED.
//
// The tables that only triggers write, row_counts and each record table's
// search table (SearchTable), carry no solo_guard (migration 00045): every
// statement that writes them runs inside a statement on a guarded table,
// after that statement's guard passed, in the same transaction. So a
// commit that changes them changed a guarded table too, and the proof
// above covers it.
//
// Writers that bypass triggers (session_replication_role = replica,
// pg_restore --disable-triggers, ALTER TABLE ... DISABLE TRIGGER), writes
// of the derived tables by hand, and tables without solo_guard, are not
// seen: an instance refuses to become the holder while any table outside
// soloExempt and the derived tables lacks the trigger, and the operator
// turns the feature off (RESOURCEAPI_POSTGRES_SOLO=off) for the others.

// The advisory lock keys: outside the 32-bit range of hashtext's, which the
// dialect's other locks use.
const (
	soloKey int64 = 0x736f6c6f00000001
	ownKey  int64 = 0x736f6c6f00000002
)

// The protocol's periods. soloLease must match the trigger's wait (twice
// it) in migration 00031.
var (
	soloPoll  = 50 * time.Millisecond
	soloLease = time.Second
	soloRetry = time.Second
)

// soloExempt are the tables whose rows neither the record cache nor the
// accounts read, so that they need no solo_guard, and row_counts, which
// only the triggers of guarded tables write (as a search table of a
// guarded table is, by its name).
var soloExempt = []string{
	"goose_db_version", "events", "events_purged", "events_published", "identity_version", "idempotency_keys",
	"webhooks", "webhook_deliveries", "webhook_attempts", "oauth_codes", "oauth_refresh_families",
	"oauth_refresh_tokens", "settings", "retired_ids", "row_counts",
}

// solo runs the protocol for one Store: its registration connection, its
// polls, and the answer to ForeignCommits.
type solo struct {
	id      int64
	connect func(ctx context.Context) (*pgx.Conn, error)
	log     *slog.Logger
	base    time.Time // lease times are durations since base (monotonic)
	// until is the end of the lease, since base, while the instance is the
	// holder; 0 otherwise. gen counts the generations.
	until atomic.Int64
	gen   atomic.Uint64

	stop    context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex // guards conn for close
	conn    *pgx.Conn
	warned  bool
	holding bool // under the run goroutine only
}

// newInstanceID returns a random positive id.
func newInstanceID() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	id := int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	if id == 0 {
		id = 1
	}
	return id
}

// commits implements sqlstore.Config.ForeignCommits: ok while the instance
// is the holder and its lease runs; the count is the generation, new each
// time it becomes the holder.
func (s *solo) commits() (uint64, bool) {
	u := s.until.Load()
	if u == 0 || int64(time.Since(s.base)) >= u {
		return 0, false
	}
	return s.gen.Load(), true
}

// serving reports whether the instance serves reads from its cache now.
func (s *solo) serving() bool {
	_, ok := s.commits()
	return ok
}

// register connects R and takes the solo lock shared, which waits until a
// holder yields. It is what makes this instance known to the others.
func (s *solo) register(ctx context.Context) error {
	conn, err := s.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", soloKey); err != nil {
		conn.Close(context.Background())
		return err
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	return nil
}

// start runs the protocol until close. R is registered already.
func (s *solo) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	go s.run(ctx)
}

func (s *solo) run(ctx context.Context) {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		if conn == nil {
			if err := s.register(ctx); err != nil {
				if !sleep(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			continue
		}
		err := s.serve(ctx, conn)
		s.until.Store(0)
		s.holding = false
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("postgres: the solo registration connection failed; reads go to the database until it is back", "err", err)
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		conn.Close(context.Background())
	}
}

// serve runs the protocol on conn until a statement fails or ctx ends.
func (s *solo) serve(ctx context.Context, conn *pgx.Conn) error {
	for {
		if !s.holding {
			if err := s.become(ctx, conn); err != nil {
				return err
			}
			if !s.holding && !sleep(ctx, soloRetry) {
				return ctx.Err()
			}
			continue
		}
		if !sleep(ctx, soloPoll) {
			return ctx.Err()
		}
		t := time.Since(s.base)
		var waiting bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = $1 AND objid = $2 AND objsubid = 1 AND NOT granted)`,
			soloKey>>32, soloKey&0xffffffff).Scan(&waiting)
		if err != nil {
			return err
		}
		if !waiting {
			s.until.Store(int64(t + soloLease))
			continue
		}
		if err := s.yield(ctx, conn); err != nil {
			return err
		}
	}
}

// yield stops serving, then gives the lock up to the waiter.
func (s *solo) yield(ctx context.Context, conn *pgx.Conn) error {
	s.until.Store(0)
	s.holding = false
	if _, err := conn.Exec(ctx, "SELECT setval('solo_holder', 0)"); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", soloKey)
	return err
}

// become tries to make the instance the holder (see above).
func (s *solo) become(ctx context.Context, conn *pgx.Conn) error {
	t := time.Since(s.base)
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", soloKey).Scan(&got); err != nil || !got {
		return err
	}
	release := func() error {
		_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", soloKey)
		return err
	}
	var unguarded string
	err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(c.relname, ', ' ORDER BY c.relname), '')
		FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
		AND c.relname <> ALL($1) AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'solo_guard')
		AND NOT EXISTS (SELECT 1 FROM pg_class r JOIN pg_trigger g ON g.tgrelid = r.oid AND g.tgname = 'solo_guard'
			WHERE r.relnamespace = c.relnamespace AND r.relname || $2 = c.relname)`,
		soloExempt, SearchTable("")).Scan(&unguarded)
	if err != nil {
		return err
	}
	if unguarded != "" {
		if !s.warned {
			s.warned = true
			s.log.Warn("postgres: tables without the solo_guard trigger; the record cache stays off", "tables", unguarded)
		}
		return release()
	}
	var holder int64
	if err := conn.QueryRow(ctx, "SELECT last_value FROM solo_holder").Scan(&holder); err != nil {
		return err
	}
	if holder != 0 && holder != s.id {
		// A holder whose registration connection was lost: its process
		// may serve from its cache until its lease ends.
		if !sleep(ctx, 2*soloLease) {
			return ctx.Err()
		}
		t = time.Since(s.base)
	}
	if holder != 0 {
		if _, err := conn.Exec(ctx, "SELECT setval('solo_holder', 0)"); err != nil {
			return err
		}
	}
	// No write of an earlier holder that skipped the solo lock may be in
	// flight: they hold ownKey.
	var drained bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", ownKey).Scan(&drained); err != nil {
		return err
	}
	if !drained {
		return release()
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", ownKey); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT setval('solo_holder', $1)", s.id); err != nil {
		return err
	}
	s.gen.Add(1)
	s.holding = true
	s.until.Store(int64(t + soloLease))
	return nil
}

// close stops the protocol: the instance stops serving, clears its id (a
// writer would otherwise wait for its lease) and closes R.
func (s *solo) close() {
	s.until.Store(0)
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.mu.Unlock()
	if conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "SELECT CASE WHEN last_value = $1 THEN setval('solo_holder', 0) END FROM solo_holder", s.id)
	conn.Close(ctx)
}

// instanceParam is the startup parameter that names the instance.
const instanceParam = "resourceapi.instance"

func instanceString(id int64) string { return strconv.FormatInt(id, 10) }

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
