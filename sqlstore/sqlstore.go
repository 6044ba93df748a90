// Package sqlstore implements resourceapi.Store once for the SQL databases
// the service supports, over Querier: database/sql's shapes, which SQLite
// gives through database/sql and PostgreSQL through pgx's own pool. Package
// sqlite and package postgres each supply what differs (a Dialect,
// connections, the write path and migrations); the queries, built only from
// resource declarations, live here.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// The locks that a Dialect's Lock takes, by name.
const (
	// LockPublish: one relay publishes at a time (PublishEvents).
	LockPublish = "events.publish"
	// LockFanOut: one transaction fans events out to webhooks at a time
	// (FanOutWebhookEvents).
	LockFanOut = "webhooks.fanout"
)

// Dialect is what differs between the SQL databases behind the store.
type Dialect interface {
	// Placeholder returns the bind parameter for the n-th argument (1-based).
	Placeholder(n int) string
	// Bool returns the literal for a boolean. Booleans compared with the
	// soft-delete flag are spliced into the SQL as literals (they come from the
	// declaration, never from a request), because SQLite re-plans a statement
	// on every run when a bound value decides between indexes.
	Bool(b bool) string
	// OrderBy returns the expression to sort by column. search says the
	// query also matches q, which may make another plan better.
	OrderBy(column string, search bool) string
	// ForUpdate is the clause that locks the rows a SELECT reads until the
	// transaction ends ("" where writes are serialised anyway), so that a
	// write's precondition and its change see the same record.
	ForUpdate() string
	// Value converts a bound value to what the driver stores: timestamps and
	// booleans differ between databases. Lists are JSON text before this.
	Value(v any) any
	// Search returns a condition matching records of res whose searchable
	// fields contain s, case-insensitively and literally (no wildcards).
	Search(q *Query, res *resourceapi.Resource, s string) string
	// Contains returns a condition matching records whose list column (a JSON
	// array of strings) contains value.
	Contains(q *Query, column, value string) string
	// Unique reports whether err is a unique-constraint violation, and on
	// which column when the driver says.
	Unique(err error) (column string, ok bool)
	// LockID serialises, until the transaction ends, the writes that may
	// insert record id of res, on databases where two transactions could
	// otherwise both find the id absent and both insert it: a row lock (see
	// ForUpdate) locks nothing when the row does not exist yet.
	LockID(ctx context.Context, tx Execer, res *resourceapi.Resource, id int64) error
	// LockRetain serialises the writes that check res's Retain invariant, on
	// databases where transactions could otherwise both pass the check.
	LockRetain(ctx context.Context, tx Execer, res *resourceapi.Resource) error
	// ObjectArray returns the aggregate that makes the rows of a query a JSON
	// array of objects, in the order of orderBy: keyValues is the objects'
	// key-value list ('name', column, ...). An empty set is [].
	ObjectArray(keyValues, orderBy string) string
	// ForeignKey reports whether err is a violation of a foreign key: a
	// reference to a record that does not exist, or the delete of a record
	// that a restricting reference still points to.
	ForeignKey(err error) bool
	// Permissions returns an expression, over the users row aliased user,
	// whose value is a JSON array of the user's effective permissions: their
	// own grants and those of their roles in the roles table, each once.
	Permissions(user string) string
	// NextID takes the next value of res's id sequence, the ids Create
	// assigns, and locks that id as LockID does. Only Create moves the
	// sequence: an id inserted by Replace leaves it where it is.
	NextID(ctx context.Context, tx Querier, res *resourceapi.Resource) (int64, error)
	// SkipLocked is the clause that makes a SELECT lock the rows it reads
	// and skip those another transaction has locked, so that relays on
	// several instances claim distinct events (" FOR UPDATE SKIP LOCKED").
	// It is "" where one process relays (SQLite: one process serves the
	// file), and the outbox then reads events outside write transactions.
	SkipLocked() string
	// IndexedBy is the clause that makes a query read its table through
	// index (after the table's name and alias), where the planner needs
	// to be told (SQLite, without statistics: " INDEXED BY index"); "" on
	// PostgreSQL, which plans by its statistics. index is one of the
	// store's names, never input.
	IndexedBy(index string) string
	// Lock is the statement that takes the lock called name for the rest
	// of the transaction, where SkipLocked is not "": it waits until no
	// other instance's transaction holds it, and holds them off until this
	// one ends. Relays take LockPublish, so that they publish one batch at
	// a time, each after the last in id order (subscribers and resuming
	// streams rely on it); webhook fan-outs take LockFanOut. It is "" where
	// one process writes (SQLite: its writes are serialised already).
	Lock(name string) string
	// SkipID moves res's id sequence past id, a free id that Create took
	// because the values before it were taken, so that later Creates do not
	// try those again. It never moves the sequence backwards.
	SkipID(ctx context.Context, tx Execer, res *resourceapi.Resource, id int64) error
	// Unavailable reports whether err means that the database could not be
	// reached or is not accepting work (the connection was refused or lost,
	// the server is shutting down or starting up): the store answers
	// resourceapi.CodeUnavailable for it, and logs each outage once.
	Unavailable(err error) bool
	// IdentityVersion returns an expression whose value is the identity
	// version (resourceapi.IdentityVersioner), which every commit that
	// changes what decides access (a user's roles, grants, password, email
	// or deletion, an API key, a role) moves on, or "" on a database
	// that only this process writes through the record cache (SQLite, whose
	// cache sees every commit). With it, accounts have a cache of their own
	// (accounts.go).
	IdentityVersion() string
}

// Querier runs statements on one connection or transaction. Its results are
// database/sql's shapes (*sql.Rows and *sql.Row satisfy Rows and Row), so
// that a store may run on database/sql (SQLite, through StdQuerier) or on a
// driver's own interface (PostgreSQL on pgx).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	// QueryContext runs a query. Its error may also come from the rows'
	// Err, once read.
	QueryContext(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRowContext runs a query of at most one row; Scan reports its
	// error, or sql.ErrNoRows (errors.Is) when it returned none.
	QueryRowContext(ctx context.Context, query string, args ...any) Row
}

// Rows are the rows of a query, as *sql.Rows reads them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is the result of a query of one row, as *sql.Row reads it.
type Row interface {
	Scan(dest ...any) error
}

// StdQuerier makes a database/sql handle (*sql.DB, *sql.Conn, *sql.Tx) a
// Querier.
func StdQuerier(q interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) Querier {
	return stdQuerier{q}
}

type stdQuerier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (s stdQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.q.ExecContext(ctx, query, args...)
}

func (s stdQuerier) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (s stdQuerier) QueryRowContext(ctx context.Context, query string, args ...any) Row {
	return s.q.QueryRowContext(ctx, query, args...)
}

// Execer runs a statement inside a write transaction.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Reader runs reads on a connection it holds for fn's duration. Each read of
// the store is one statement, so it needs no transaction to be consistent.
type Reader interface {
	Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error
}

// Tx is the write transaction a Writer hands to fn.
type Tx interface {
	Querier
	// AfterEnd registers f to run once the transaction has ended, committed
	// or rolled back, before Write returns to any caller. It runs exactly
	// once for every call, even when fn failed, or when the writer runs fn
	// again in a new transaction (then the new run registers its own).
	AfterEnd(f func())
}

// AtCommiter is implemented by a Tx that can send a statement with its
// commit, in the same round trip, where the write needs nothing back from it
// (the event a write records in the outbox). The statement runs before the
// COMMIT, in the transaction, and if it fails the transaction does not
// commit and the write returns its error. A Tx without it runs the statement
// at once (see execAtCommit).
type AtCommiter interface {
	ExecAtCommit(query string, args ...any)
}

// Follower is implemented by a Tx that can send a statement right after
// the transaction's next one, in the same round trip (a PATCH's UPDATE
// with the read FOR UPDATE of the record it changes: see Update).
// PostgreSQL runs them in order; when the next statement fails, the one
// that follows does not run. Only PostgreSQL's Tx is one: the UPDATE it
// carries is written in its SQL (GREATEST, see updateQuery).
type Follower interface {
	// QueryRowAfterNext queues query to run right after the next
	// statement the transaction runs, and returns its row, which can be
	// scanned once the next statement's row has been. ok is false when
	// the Tx cannot (then nothing is queued).
	QueryRowAfterNext(query string, args ...any) (row Row, ok bool)
}

// execAtCommit runs query in tx with its commit when tx can (AtCommiter),
// and now otherwise.
func execAtCommit(ctx context.Context, tx Tx, query string, args ...any) error {
	if a, ok := tx.(AtCommiter); ok {
		a.ExecAtCommit(query, args...)
		return nil
	}
	_, err := tx.ExecContext(ctx, query, args...)
	return err
}

// NextIDInline is implemented by a Dialect whose INSERT can take the next
// id itself, so that a Create is one statement where NextID and the INSERT
// were two.
type NextIDInline interface {
	// NextIDExpr returns an expression, for the VALUES of an INSERT of
	// res, whose value is what NextID would return, taken and locked as
	// NextID does. It names res by constants, so that the database
	// resolves them when it plans the statement, not on each execution.
	NextIDExpr(res *resourceapi.Resource) string
	// CurrentID returns the value NextIDExpr took last in this
	// transaction: the id of an INSERT that found it taken.
	CurrentID(ctx context.Context, tx Querier, res *resourceapi.Resource) (int64, error)
}

// EventPayloadText is implemented by a Dialect whose events table keeps
// the payload of the events this version records in a text column of its
// own (PostgreSQL, migration 00048: jsonb's parse at every insert and its
// rendering at every read cost more than the rest of an event's insert,
// and no statement reads into the JSON), the events recorded before in
// the column payload.
type EventPayloadText interface {
	// EventPayloadColumn is the column an event's INSERT writes its
	// payload to.
	EventPayloadColumn() string
	// EventPayload is an expression whose value is an event's payload as
	// text, whichever column holds it.
	EventPayload() string
}

// EventHorizon is implemented by the Dialect of a database whose write
// transactions run concurrently and may commit their event ids out of
// order (PostgreSQL, migration 00028: a writer takes its id under a shared
// lock). What is read in id order (the relay's batches, a stream resuming
// from the outbox) stops at a horizon, an id at or below which every event
// is final: committed, or never will be. Without it (SQLite's one writer),
// every committed id is final.
type EventHorizon interface {
	// EstablishHorizon is a statement, run outside any transaction (its
	// lock is released as soon as it has it), that waits until the
	// transactions of every event id taken so far have ended, records the
	// greatest id as the horizon, and returns the horizon, or NULL when
	// it only finished an interrupted run's wait (run it again).
	EstablishHorizon() string
	// Horizon is an expression whose value is the last horizon recorded.
	Horizon() string
}

// Writer runs fn in a write transaction and commits it. It returns fn's error
// (with nothing committed) or the commit's. fn must use the context it is
// given for its statements, not the caller's: a writer may share the
// transaction with other callers (package sqlite groups commits), and one
// caller's cancellation must not interrupt the others' writes. A writer may
// run fn more than once, each time in a new transaction of which only the
// last can commit.
type Writer interface {
	Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

type besideKey struct{}

// Beside marks ctx's writes as ones that may wait, up to wait, to join the
// transaction of other writes: a writer that groups commits (SQLite's)
// then commits them with those, at no commit (no fsync) of their own, or
// alone once wait has passed without one; other writers ignore it. For
// background writes that can wait, such as a webhook worker's rounds, so
// that they do not add a commit to the requests'.
func Beside(ctx context.Context, wait time.Duration) context.Context {
	return context.WithValue(ctx, besideKey{}, wait)
}

// BesideOf returns how long ctx's writes may wait to join others' (Beside).
func BesideOf(ctx context.Context) (time.Duration, bool) {
	wait, ok := ctx.Value(besideKey{}).(time.Duration)
	return wait, ok
}

// Detach returns the context a server database's statements run under: ctx's
// values and deadline, without its cancellation. net/http cancels a request's
// context when its client hangs up, and a driver can only interrupt a
// statement in flight by abandoning its connection (pgx closes it: the pool
// then pays a new session, its start-up and cold caches, for the next
// request) or by a cancel request (a connection of its own to the server).
// The store's statements are short and bounded, so finishing one costs less
// than either; a deadline still ends them.
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, deadline)
	}
	return d, func() {}
}

// Store implements resourceapi.Store on a SQL database.
type Store struct {
	reader  Reader
	writer  Writer
	dialect Dialect
	now     resourceapi.Clock
	cache   *cache
	// accounts caches accounts where the record cache cannot (accounts.go).
	accounts *accountCache
	columns  sync.Map // *resourceapi.Resource -> columnSet, built once
	// events receives a value after a transaction that recorded events
	// ends (see EventsWritten).
	events chan struct{}
	serial serialOutbox
	// identity and foreign are the identity version of a database that
	// keeps none (accounts.go): this process's writes that may change what
	// decides access, and the commits of other processes.
	identity atomic.Int64
	foreign  func() (uint64, bool)
	outage   outage
	// eventInsert is the text of an event's INSERT (recordEvent), and
	// eventColumns the columns scanEvents reads.
	eventInsert, eventColumns string
}

var _ resourceapi.Store = (*Store)(nil)

// Config says how a Store reaches its database.
type Config struct {
	Reader  Reader
	Writer  Writer
	Dialect Dialect
	// Now is the clock; nil is time.Now.
	Now resourceapi.Clock
	// CacheRecords, when positive, caches up to that many entries (records
	// by id, and list pages), whose estimated sizes add up to at most
	// EntryBytes each on average. Set it only when every commit to the
	// database either goes through this Store or is reported by
	// ForeignCommits.
	CacheRecords int
	// ForeignCommits, when not nil, reports the commits made to the database
	// without this Store (another process writing the SQLite file; on
	// PostgreSQL, ok only while no other writer can commit). It
	// returns a count that grows with them, and must have counted every such
	// commit that completed before it was called; ok false means it cannot
	// tell now, and the read is answered by the database, uncached. Every
	// read of the cache calls it first, from any goroutine.
	ForeignCommits func() (count uint64, ok bool)
	// OnStatement, when set, is called with the text of every statement the
	// store runs through Reader and Writer, before it runs: a hook for tests
	// that count the statements an operation costs (GraphQL's batching).
	// It is called from many goroutines at once.
	OnStatement func(query string)
	// Trace, when set, is called as every statement the store runs through
	// Reader and Writer starts, with its text (values are bound, never in
	// it); the function it returns is called with the statement's error
	// once it has run (package tracing: a span per statement).
	Trace func(ctx context.Context, query string) (context.Context, func(error))
	// Logger receives a warning when the database stops answering (once
	// per outage) and a line when it answers again; nil discards them.
	Logger *slog.Logger
}

// New returns a Store for cfg.
func New(cfg Config) *Store {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cache := newCache(cfg.CacheRecords)
	if cache != nil {
		cache.foreign = cfg.ForeignCommits
	}
	reader, writer := cfg.Reader, cfg.Writer
	if cfg.OnStatement != nil {
		reader = tracedReader{reader, cfg.OnStatement}
		writer = tracedWriter{writer, cfg.OnStatement}
	}
	if cfg.Trace != nil {
		reader = spanReader{reader, cfg.Trace}
		writer = spanWriter{writer, cfg.Trace}
	}
	s := &Store{
		dialect: cfg.Dialect,
		now:     now,
		cache:   cache,
		events:  make(chan struct{}, 1),
		foreign: cfg.ForeignCommits,

		eventInsert:  eventInsert(cfg.Dialect),
		eventColumns: eventColumns(cfg.Dialect),
	}
	s.reader, s.writer = guardedReader{reader, s}, guardedWriter{writer, s}
	s.outage.log = cfg.Logger
	if s.outage.log == nil {
		s.outage.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Dialect.IdentityVersion() != "" {
		s.accounts = newAccountCache()
	}
	return s
}

// Ping implements resourceapi.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var one int
		return q.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	})
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// List implements resourceapi.Store.
func (s *Store) List(ctx context.Context, res *resourceapi.Resource, lq resourceapi.ListQuery) (resourceapi.Page, error) {
	// A done context fails every call, even one the cache could answer.
	if err := ctx.Err(); err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: %w", res.Name, err)
	}
	if err := lq.Check(res); err != nil {
		return resourceapi.Page{}, err
	}
	var key string
	if s.cache != nil {
		key = listKey(lq)
	}
	cached, ok, fill := s.cache.page(res, key)
	if ok {
		return cached, nil
	}
	var page resourceapi.Page // declared here, so that a hit allocates nothing
	// One statement reads the page and its total, so they always agree
	// without a transaction's round trips.
	err := s.reader.Read(ctx, func(ctx context.Context, tx Querier) error {
		var err error
		page, err = s.list(ctx, tx, res, lq)
		return err
	})
	if err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: %w", res.Name, err)
	}
	s.cache.storePage(res, key, fill, page)
	return page, nil
}

func (s *Store) list(ctx context.Context, tx Querier, res *resourceapi.Resource, lq resourceapi.ListQuery) (resourceapi.Page, error) {
	cols := s.readColumns(res)
	q := s.newQuery()
	var plan planKind
	if planFree(lq) {
		plan |= genericPlan
	}
	if lq.Search != "" && searchIndexed(s.dialect, lq.Search) {
		plan |= searchPlan
	}
	if plan != 0 {
		ctx = context.WithValue(ctx, planKey{}, plan)
	}
	if ids, ok := s.dialect.(IDsFirst); ok && ids.IDsFirst() && (lq.Search != "" || lq.Offset >= deepOffset) {
		s.idsFirst(q, cols, res, lq, s.versionColumn(s.identityCheck(ctx)))
		return s.scanPage(ctx, tx, q, cols, res, lq)
	}
	q.WriteString("SELECT " + cols.list + ", ")
	// The total comes with every row. With q, a window function counts the
	// matches, so the index search runs once; not after a cursor, which
	// leaves rows out of the window. Otherwise a subquery, which both
	// databases run once per statement: without filters but the
	// soft-delete state it reads row_counts, which triggers keep in every
	// schema (counting rows costs SQLite about 50 ns a row, and PostgreSQL's
	// count visits the table until it is vacuumed).
	switch {
	case lq.NoTotal:
		q.WriteString("-1")
	case lq.Search != "" && lq.Cursor == nil:
		q.WriteString("count(*) OVER ()")
	default:
		q.WriteString("(")
		s.count(q, res, lq)
		q.WriteString(")")
	}
	q.WriteString(s.versionColumn(s.identityCheck(ctx)) + " FROM " + res.Name)
	desc := readsDesc(lq)
	q.where(res, lq, s.keyset(q, res, lq, desc)...)
	q.WriteString(" ORDER BY " + s.orderBy(res, lq.Sort, desc, lq.Search != ""))
	q.WriteString(pageLimit(q, lq))
	return s.scanPage(ctx, tx, q, cols, res, lq)
}

type planKey struct{}

// SearchIndex is implemented by a dialect whose search index serves only
// some values of q (PostgreSQL's trigram indexes: a q with a trigram). A
// search the index does not serve is not a SearchPlan: it is not planned
// to take the index.
type SearchIndex interface {
	SearchIndexed(q string) bool
}

func searchIndexed(d Dialect, q string) bool {
	si, ok := d.(SearchIndex)
	return !ok || si.SearchIndexed(q)
}

// planKind is the value under planKey, what GenericPlan and
// SearchPlan report: a byte, which a context holds without an allocation.
type planKind uint8

const (
	genericPlan planKind = 1 << iota // GenericPlan
	searchPlan                       // SearchPlan
)

type oneRowKey struct{}

type pageRowsKey struct{}

// PageRows reports whether the rows of the statement run with ctx are the
// records of a list's page, which live and die together (a response, or
// one entry of the cache): a Reader may make their strings out of shared
// arrays (postgres). Records read otherwise may be cached one by one, and
// one of them must not keep the others' bytes.
func PageRows(ctx context.Context) bool {
	v, _ := ctx.Value(pageRowsKey{}).(bool)
	return v
}

// OneRow reports whether the statement run with ctx is a record's lookup
// by id (Get), which never waits for a lock: a Reader may send it in one
// pipeline with other callers' (postgres batches them). Other one-row
// statements (the relay's horizon waits for transactions) run alone.
func OneRow(ctx context.Context) bool {
	v, _ := ctx.Value(oneRowKey{}).(bool)
	return v
}

// GenericPlan reports whether the statement run with ctx should use its
// prepared statement's generic plan, made once per connection, rather than
// a plan made for its values at every run. The store asks for it where the
// best plan does not depend on the values: a list whose parameters are the
// text of q, the offset and the name of the resource, which Reader.Read's
// Querier on PostgreSQL passes on (plan_cache_mode). PostgreSQL's default
// chooses custom plans for these statements, and planning one (the
// selectivity of an ILIKE pattern is estimated by running it against the
// column's statistics) cost more than running it: 100 µs of 200 for page 3,
// four fifths of a search that matches nothing.
func GenericPlan(ctx context.Context) bool {
	v, _ := ctx.Value(planKey{}).(planKind)
	return v&genericPlan != 0
}

// SearchPlan reports whether the statement run with ctx is a search (q),
// which should find its matches through the search index whatever the
// planner makes of the index's price: a Reader may plan it with sequential
// scans disabled (postgres: enable_seqscan). Its plan cannot see q (the
// pattern is a parameter, lower-cased in an InitPlan), so it is made for
// every q alike, and PostgreSQL prices a GIN index's pending list (the
// entries of recent writes, which every scan of it reads) as random reads
// at planning time: a generic plan, made once per connection, depended on
// how full the list was when that connection first planned it, and with a
// longer list it scanned the whole search table. The search tables have no
// other index a scan could take without a condition on it (their primary
// key is looked up by id only), so the plan is the trigram index's at every
// fill of the list; the statement's other scans are by the sort's index or
// by id.
func SearchPlan(ctx context.Context) bool {
	v, _ := ctx.Value(planKey{}).(planKind)
	return v&searchPlan != 0
}

// planFree reports whether lq's statement has the same best plan whatever
// its values: no filter but the soft-delete state and boolean fields
// (literals in the SQL text, see Query.where), so its parameters are q, the
// cursor (a range of the sort's index), the offset and the count's
// resource name. Other filters' values (a rare role, an age) decide
// between an index and a scan.
func planFree(lq resourceapi.ListQuery) bool {
	for _, fv := range lq.Filters {
		if fv.Filter.Kind == resourceapi.FilterSoftDelete {
			continue
		}
		if _, literal := fv.Value.(bool); !literal || fv.Filter.Kind != resourceapi.FilterEqual {
			return false
		}
	}
	return true
}

// deepOffset is the offset from which a page chooses its ids first on a
// database that does (IDsFirst): below it, reading the skipped rows costs
// less than looking the page's rows up again by id.
const deepOffset = 200

// readsDesc reports whether lq's page is read in descending order: a page
// before a cursor is read backwards from it, then turned round (scanPage).
func readsDesc(lq resourceapi.ListQuery) bool {
	return lq.Desc != (lq.Cursor != nil && lq.Cursor.Before)
}

// pageLimit returns the LIMIT (and OFFSET) of lq's page: one row more than
// the page, which tells whether another page follows (Page.More). The
// limit is a number in the text (ListQuery.Check bounds it), so that a
// generic plan (GenericPlan) knows it: with a parameter, PostgreSQL plans
// for a tenth of the table and joins by a hash over a sequential scan.
//
// An offset below deepOffset (the first ten pages of 20) is a number in the
// text too: page 3's statement then has no parameter at all, and
// PostgreSQL plans a statement without parameters once and runs that plan
// every time, so the page needs neither a plan of its own nor the
// setting that asks for the generic one (GenericPlan: one statement less
// in its round trip). Deeper offsets stay bound, so that the pages of a
// list do not each prepare a statement of their own.
func pageLimit(q *Query, lq resourceapi.ListQuery) string {
	out := " LIMIT " + strconv.Itoa(lq.Limit+1)
	switch {
	case lq.Offset <= 0:
	case lq.Offset < deepOffset:
		out += " OFFSET " + strconv.Itoa(lq.Offset)
	default:
		out += " OFFSET " + q.Arg(lq.Offset)
	}
	return out
}

// keyset returns the condition that selects the records after lq's cursor
// in the order of its sort field, descending when desc, then id in the same
// direction, nulls sorting as the smallest value: one range of the index
// of the sort field, so that a page costs the same at any depth. It is
// none without a cursor.
func (s *Store) keyset(q *Query, res *resourceapi.Resource, lq resourceapi.ListQuery, desc bool) []string {
	c := lq.Cursor
	if c == nil {
		return nil
	}
	f := res.Field(c.Sort)
	col := s.dialect.OrderBy(column(f), lq.Search != "")
	op := " > "
	if desc {
		op = " < "
	}
	if f.Name == "id" {
		return []string{col + op + q.Arg(c.ID)}
	}
	if c.Value == nil {
		// Only a nullable field has null positions. Nulls come first in
		// ascending order, last in descending order.
		if desc {
			return []string{"(" + col + " IS NULL AND id < " + q.Arg(c.ID) + ")"}
		}
		return []string{"(" + col + " IS NULL AND id > " + q.Arg(c.ID) + " OR " + col + " IS NOT NULL)"}
	}
	var v string
	if b, ok := c.Value.(bool); ok {
		v = s.dialect.Bool(b) // as filters do (see Query.where)
	} else {
		v = q.Arg(c.Value)
	}
	// A row value comparison, which both databases read as one range of an
	// index on (column, id).
	cond := "(" + col + ", id)" + op + "(" + v + ", " + q.Arg(c.ID) + ")"
	if f.Nullable && desc {
		cond = "(" + cond + " OR " + col + " IS NULL)"
	}
	return []string{cond}
}

// IDsFirst is implemented by a Dialect whose database should choose a
// page's ids before it reads the page's rows (PostgreSQL), see idsFirst.
type IDsFirst interface {
	IDsFirst() bool
	// RowEstimate returns an expression, cheap to evaluate, of about how
	// many rows table holds (the planner's statistics), at least 0: a
	// search compares its number of matches with it to choose its plan.
	RowEstimate(table string) string
}

// idsFirst appends the statement of a search or a deep page that chooses the
// page's ids first and reads only those rows. A search is searchFirst's. A
// deep page walks its OFFSET in the sort index alone (an index-only scan of
// (deleted, <sort>, id)) instead of fetching every skipped row from the
// table.
func (s *Store) idsFirst(q *Query, cols *columns, res *resourceapi.Resource, lq resourceapi.ListQuery, version string) {
	if lq.Search != "" {
		s.searchFirst(q, cols, res, lq, version)
		return
	}
	desc := readsDesc(lq)
	order := s.orderBy(res, lq.Sort, desc, false)
	if kept, _ := keptCount(res, lq); kept && lq.Cursor == nil {
		s.deepPage(q, cols, res, lq, version)
		return
	}
	q.WriteString("SELECT " + cols.list + ", ")
	if lq.NoTotal {
		q.WriteString("-1")
	} else {
		q.WriteString("(")
		s.count(q, res, lq)
		q.WriteString(")")
	}
	q.WriteString(version + " FROM " + res.Name + " WHERE id IN (SELECT id FROM " + res.Name)
	q.where(res, lq, s.keyset(q, res, lq, desc)...)
	q.WriteString(" ORDER BY " + order + pageLimit(q, lq) + ") ORDER BY " + order)
}

// deepPage appends the statement of a deep page by number (no cursor) whose
// total row_counts keeps (keptCount): it reads the total first (t, the
// same count the page reports, in the same snapshot), then walks the sort's
// index from whichever end is nearer to the page, the index only, and
// reads the page's rows by id. From the start: OFFSET o, o+limit+1 entries
// read. From the end, when 2*o > n: the same rows in the reverse order,
// n-o-limit-1 entries skipped (none past the last page), turned round by
// the outer ORDER BY. Over the pages of a list chosen at random, half as
// many entries as walking from the start, and the last page as cheap as
// the first. The count is exact (the triggers that keep row_counts run in
// every writing transaction), so both ends find the same rows. Which way
// is decided by a one-time filter at run time, so one generic plan holds
// both.
func (s *Store) deepPage(q *Query, cols *columns, res *resourceapi.Resource, lq resourceapi.ListQuery, version string) {
	desc := readsDesc(lq)
	order := s.orderBy(res, lq.Sort, desc, false)
	reverse := s.orderBy(res, lq.Sort, !desc, false)
	q.WriteString("WITH t AS MATERIALIZED (SELECT (")
	s.count(q, res, lq)
	o := "CAST(" + q.Arg(int64(lq.Offset)) + " AS BIGINT)"
	q.WriteString(") AS n), w AS MATERIALIZED (SELECT n, 2 * " + o + " > n AS back FROM t) SELECT " + cols.list + ", ")
	if lq.NoTotal {
		q.WriteString("-1")
	} else {
		q.WriteString("(SELECT n FROM w)")
	}
	q.WriteString(version + " FROM " + res.Name + " WHERE id = ANY(ARRAY((SELECT id FROM " + res.Name)
	q.where(res, lq, "NOT (SELECT back FROM w)")
	q.WriteString(" ORDER BY " + order + pageLimit(q, lq) + ") UNION ALL (SELECT id FROM " + res.Name)
	q.where(res, lq, "(SELECT back FROM w)")
	k := strconv.Itoa(lq.Limit + 1)
	q.WriteString(" ORDER BY " + reverse + " LIMIT (SELECT greatest(least(" + k + ", n - " + o + "), 0) FROM w)" +
		" OFFSET (SELECT greatest(n - " + o + " - " + k + ", 0) FROM w)))) ORDER BY " + order)
}

// searchFirst appends the statement of a search on a database that chooses
// a page's ids first (IDsFirst). It counts the matches first (c: the
// trigram index, each match checked again), then takes the page's ids one
// of two ways, whichever the count says costs less:
//
//   - walk: the sort's index in the list's order, from the cursor if any,
//     keeping the rows that match, until the page is full. With n matches
//     among about N rows spread evenly, the page's k rows (offset, limit
//     and one more) are among the first k*N/n the walk reads. q=abc, 1,250
//     of 10,000 users: 161 rows read, where sorting the matches compared
//     all 1,250 names.
//   - sort: the matches' ids and sort keys (m, the trigram index again),
//     sorted; what a rare q needs (n*n < k*N). A q that matches nothing
//     takes neither.
//
// The walk's subquery is fenced (OFFSET 0) with only the soft-delete state
// and the cursor's range in it, so that its plan is the index's range,
// whatever PostgreSQL guesses of q's selectivity in a generic plan; the
// other conditions are checked above it. Without a soft-delete filter
// (status=all), no index gives the order, and the search sorts. The walk
// reads at most the table's rows when the matches bunch at the far end of
// the order: about what counting a q that matches every row costs.
func (s *Store) searchFirst(q *Query, cols *columns, res *resourceapi.Resource, lq resourceapi.ListQuery, version string) {
	desc := readsDesc(lq)
	order := s.orderBy(res, lq.Sort, desc, true)
	keys := "id"
	if f := res.Field(lq.Sort); f.Name != "id" {
		keys += ", " + column(f)
	}
	// fence: the conditions that select the walk's range of the sort index.
	fence := lq
	fence.Search, fence.Filters = "", nil
	walkable := res.SoftDelete == ""
	for _, fv := range lq.Filters {
		if fv.Filter.Kind == resourceapi.FilterSoftDelete {
			fence.Filters = append(fence.Filters, fv)
			walkable = true
		}
	}
	total := "(SELECT n FROM g)"
	if lq.NoTotal {
		total = "-1"
	}
	side, _ := s.dialect.(SearchTable)
	// rest: lq's filters without q, which the rows of res are checked
	// against where q is matched in the search table.
	rest := lq
	rest.Search = ""
	q.WriteString("WITH c AS MATERIALIZED (SELECT ")
	if side != nil {
		s.searchCount(q, side, res, lq, rest, fence)
	} else {
		q.WriteString("count(*) AS n FROM " + res.Name)
		q.where(res, lq)
	}
	q.WriteString("), g AS MATERIALIZED (SELECT c.n, ")
	if walkable {
		k := lq.Offset + lq.Limit + 1
		q.WriteString("c.n > 0 AND CAST(c.n AS float8) * c.n >= " + strconv.Itoa(k) + " * " + s.dialect.(IDsFirst).RowEstimate(res.Name) + " AS walk")
	} else {
		q.WriteString("false AS walk")
	}
	q.WriteString(" FROM c), m AS MATERIALIZED (SELECT " + keys + " FROM " + res.Name)
	if side != nil {
		// Each match is looked up by id, a cost in proportion to the
		// matches, which are few when the search sorts them and the walk
		// can be taken (n*n < k*N). With id IN, the planner (guessing q's
		// selectivity in a generic plan) hash-joined them with a scan of
		// the whole table.
		q.where(res, rest, "id = ANY(ARRAY(SELECT id FROM "+side.SearchTable(res)+" WHERE "+side.SearchMatch(q, res, lq.Search)+"))")
	} else {
		q.where(res, lq)
	}
	// The page's ids are an array (an InitPlan), which the primary key's
	// index looks up: with id IN, the planner, counting 21 ids from each
	// way, hash-joined them with a scan of the whole table.
	q.WriteString(") SELECT " + cols.list + ", " + total + version + " FROM " + res.Name + " WHERE id = ANY(ARRAY(")
	if walkable {
		q.WriteString("(SELECT id FROM (SELECT * FROM " + res.Name)
		q.where(res, fence, s.keyset(q, res, lq, desc)...)
		q.WriteString(" ORDER BY " + order + " OFFSET 0) w")
		if side != nil {
			// Each row walked is looked up in the search table by id: a
			// join would find every match again through the trigram index.
			q.where(res, rest, searchRow(q, side, res, lq.Search, "w"), "(SELECT walk FROM g)")
		} else {
			q.where(res, lq, "(SELECT walk FROM g)")
		}
		q.WriteString(pageLimit(q, lq) + ") UNION ALL ")
	}
	// A q that matches nothing does not look for its matches again.
	q.WriteString("(SELECT id FROM m WHERE NOT (SELECT walk FROM g) AND (SELECT n FROM g) > 0")
	if keyset := s.keyset(q, res, lq, desc); len(keyset) > 0 {
		q.WriteString(" AND " + keyset[0])
	}
	q.WriteString(" ORDER BY " + order + pageLimit(q, lq) + "))) ORDER BY " + order)
}

// SearchTable is implemented by a Dialect whose database keeps what q is
// matched against in a table of its own per resource (PostgreSQL), so that
// a write of a field that is not searched leaves the search index alone.
// Its Search is a condition on the resource's table (the ids of the
// matches); searchFirst uses the table itself.
type SearchTable interface {
	// SearchTable returns the name of res's search table: its records'
	// ids, res's soft-delete column under the same name, and what
	// SearchMatch reads.
	SearchTable(res *resourceapi.Resource) string
	// SearchMatch returns a condition on the columns of res's search table
	// matching the rows of the records whose searchable fields contain s,
	// as Search does.
	SearchMatch(q *Query, res *resourceapi.Resource, s string) string
}

// searchCount appends the count of lq's matches, as the column n, where
// the dialect keeps a search table. With no filter but the soft-delete
// state (which the table keeps), the table alone counts them, through its
// trigram index; hidden records left out (keptCount) are few, and those
// that match are subtracted, each looked up by id. Other filters are
// checked on the records' rows, which the matches' ids are joined with:
// joining every match cost a search of 1,250 matches among 10,000 users
// three times the count in the search table alone. rest is lq without
// q, state lq's soft-delete filters alone (searchFirst's fence).
func (s *Store) searchCount(q *Query, side SearchTable, res *resourceapi.Resource, lq, rest, state resourceapi.ListQuery) {
	kept, hidden := keptCount(res, rest)
	if !kept {
		q.WriteString("count(*) AS n FROM " + res.Name)
		q.where(res, lq)
		return
	}
	q.WriteString("(SELECT count(*) FROM " + side.SearchTable(res))
	q.where(res, state, side.SearchMatch(q, res, lq.Search))
	q.WriteString(")")
	if hidden {
		q.WriteString(" - (SELECT count(*) FROM " + res.Name)
		q.where(res, state, column(res.Field(res.Hidden))+" = "+s.dialect.Bool(true), searchRow(q, side, res, lq.Search, res.Name))
		q.WriteString(")")
	}
	q.WriteString(" AS n")
}

// searchRow returns the condition that the record whose row is named row
// matches s, looked up in the search table by its id.
func searchRow(q *Query, side SearchTable, res *resourceapi.Resource, s, row string) string {
	return "(SELECT " + side.SearchMatch(q, res, s) + " FROM " + side.SearchTable(res) + " s WHERE s.id = " + row + ".id)"
}

// scanPage runs q, a page's statement (the record's columns, the total and,
// when the caller's account is checked, the identity version), and reads
// the page: at most lq.Limit records, in the list's order, and whether more
// follow.
func (s *Store) scanPage(ctx context.Context, tx Querier, q *Query, cols *columns, res *resourceapi.Resource, lq resourceapi.ListQuery) (resourceapi.Page, error) {
	page := resourceapi.Page{Records: []resourceapi.Record{}}
	if lq.NoTotal {
		page.Total = -1
	}
	check := s.identityCheck(ctx)
	rows, err := tx.QueryContext(context.WithValue(ctx, pageRowsKey{}, true), q.String(), q.args...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	page.Records = make([]resourceapi.Record, 0, lq.Limit)
	var sc rowScratch
	for rows.Next() {
		if len(page.Records) == lq.Limit {
			page.More = true
			break
		}
		rec, err := s.scanRows(rows, cols, check, &sc, &page.Total)
		if err != nil {
			return page, err
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	if lq.Cursor != nil && lq.Cursor.Before {
		slices.Reverse(page.Records)
	}
	if len(page.Records) == 0 && (lq.Offset > 0 || lq.Cursor != nil) && !lq.NoTotal {
		// Past the last page there is no row to carry the total.
		count := s.newQuery()
		s.count(count, res, lq)
		if err := tx.QueryRowContext(ctx, count.String(), count.args...).Scan(&page.Total); err != nil {
			return page, fmt.Errorf("count: %w", err)
		}
	}
	return page, nil
}

// orderBy returns the order of a list sorted by the field named sort: that
// field, then id, descending when desc.
func (s *Store) orderBy(res *resourceapi.Resource, sort string, desc, search bool) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	// The sort field comes from the declaration (ParseListQuery checked it),
	// never from the request's text.
	sortField := res.Field(sort)
	out := s.dialect.OrderBy(column(sortField), search) + dir
	if sortField.Nullable {
		// null sorts as the smallest value on every database (PostgreSQL's
		// default is the opposite; its indexes are declared to match).
		if desc {
			out += " NULLS LAST"
		} else {
			out += " NULLS FIRST"
		}
	}
	if sortField.Name != "id" {
		out += ", id" + dir
	}
	return out
}

// count appends a query for the number of records matching lq.
func (s *Store) count(q *Query, res *resourceapi.Resource, lq resourceapi.ListQuery) {
	kept, hidden := keptCount(res, lq)
	if !kept {
		q.WriteString("SELECT count(*) FROM " + res.Name)
		q.where(res, lq)
		return
	}
	var states []string // the soft-delete states lq selects
	for _, fv := range lq.Filters {
		if fv.Filter.Kind == resourceapi.FilterSoftDelete {
			states = append(states, s.dialect.Bool(fv.Value == resourceapi.StatusDeleted))
		}
	}
	q.WriteString("SELECT CAST(coalesce(sum(n), 0) AS BIGINT)") // PostgreSQL's sum of bigint is numeric, slower to decode
	if hidden {
		// Hidden records are few (an OAuth client's service user each),
		// and a partial index holds them: counting them costs little.
		q.WriteString(" - (SELECT count(*) FROM " + res.Name + " WHERE " + column(res.Field(res.Hidden)) + " = " + s.dialect.Bool(true))
		for _, st := range states {
			q.WriteString(" AND " + column(res.Field(res.SoftDelete)) + " = " + st)
		}
		q.WriteString(")")
	}
	// The resource's name is a declared identifier (it names the table
	// above), written as a literal so that a page's statement can go
	// without parameters (pageLimit).
	q.WriteString(" FROM row_counts WHERE resource = " + nameLiteral(res.Name))
	for _, st := range states {
		q.WriteString(" AND deleted = " + st)
	}
}

// nameLiteral returns name, a declared identifier, as an SQL string
// literal. It panics on anything but letters, digits and underscores, which
// a declaration never holds (the name is a table's in the same text).
func nameLiteral(name string) string {
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			panic("sqlstore: resource name " + strconv.Quote(name) + " is not an identifier")
		}
	}
	return "'" + name + "'"
}

// keptCount reports whether row_counts holds the total of lq: no search and
// no filter but the soft-delete state, and the hidden records left out
// (hidden), which the count subtracts.
func keptCount(res *resourceapi.Resource, lq resourceapi.ListQuery) (kept, hidden bool) {
	if lq.Search != "" {
		return false, false
	}
	for _, fv := range lq.Filters {
		switch {
		case fv.Filter.Kind == resourceapi.FilterSoftDelete:
		case res.Hidden != "" && fv.Filter.Kind == resourceapi.FilterEqual && fv.Filter.Field == res.Hidden && fv.Value == false:
			hidden = true
		default:
			return false, false
		}
	}
	return true, hidden
}

// Get implements resourceapi.Store.
func (s *Store) Get(ctx context.Context, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	rec, _, err := s.GetMemo(ctx, res, id)
	return rec, err
}

var _ resourceapi.MemoStore = (*Store)(nil)

// GetMemo implements resourceapi.MemoStore: a record from the cache comes
// with the memo of its entry, which the entry's removal (a write of the
// record, of its resource as a whole, or of another process) drops with
// it; a record read from the database comes with none.
func (s *Store) GetMemo(ctx context.Context, res *resourceapi.Resource, id int64) (resourceapi.Record, *resourceapi.Memo, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("get %s %d: %w", res.Singular, id, err)
	}
	cached, memo, fill := s.cache.record(res, id)
	if cached != nil {
		return cached, memo, nil
	}
	var rec resourceapi.Record // declared here, so that a hit allocates nothing
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		rec, err = s.get(context.WithValue(ctx, oneRowKey{}, true), q, res, id, "", s.identityCheck(ctx))
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("get %s %d: %w", res.Singular, id, err)
	}
	if rec == nil {
		return nil, nil, notFound(res)
	}
	s.cache.storeRecord(res, fill, rec)
	return rec, nil, nil
}

// get returns the record, or nil when it does not exist. suffix ends the
// query (a locking clause). check, when not nil, is told the identity
// version the statement saw.
func (s *Store) get(ctx context.Context, db Querier, res *resourceapi.Resource, id int64, suffix string, check *resourceapi.IdentityCheck) (resourceapi.Record, error) {
	cols := s.readColumns(res)
	var query string
	switch {
	case suffix != "":
		query = "SELECT " + cols.list + s.versionColumn(check) + " FROM " + res.Name +
			" WHERE id = " + s.dialect.Placeholder(1) + suffix
	case check == nil:
		query = cols.byID[0]
	default:
		query = cols.byID[1]
	}
	row := db.QueryRowContext(ctx, query, id)
	rec, err := s.scanChecked(row, cols, check)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return rec, err
}

// Create implements resourceapi.Store.
func (s *Store) Create(ctx context.Context, res *resourceapi.Resource, rec resourceapi.Record, before ...resourceapi.Prerequisite) (resourceapi.Record, error) {
	var out resourceapi.Record
	actor := resourceapi.ActorFrom(ctx) // the caller's: the writer's context may be another's
	idem := idempotencyOf(ctx)
	var in *insertion
	if len(before) == 0 {
		in = s.prepareCreate(res, rec)
	}
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.idempotentBefore(ctx, tx, idem); err != nil {
			return err
		}
		if len(before) > 0 {
			// The record is written anew each round: a retried transaction
			// links it to the prerequisites that round created.
			rec = rec.Clone()
		}
		pres := make([]resourceapi.Record, len(before))
		for i, p := range before {
			pre, err := s.create(ctx, tx, p.Resource, p.Record)
			if err != nil {
				return err
			}
			pres[i] = pre
			rec[p.Link] = pre.ID()
		}
		var err error
		if in != nil {
			out, err = s.createPrepared(ctx, tx, in)
		} else {
			out, err = s.create(ctx, tx, res, rec)
		}
		if err != nil {
			return err
		}
		if err := s.keepIdempotent(ctx, tx, idem, out); err != nil {
			return err
		}
		if err := s.confirmIdentity(ctx, tx); err != nil {
			return err
		}
		// The events last, once everything else is written: on
		// PostgreSQL an event's insert holds the lock that orders event
		// ids by commit until the transaction ends (recordEvent).
		for i, p := range before {
			if err := s.recordEvent(ctx, tx, p.Resource, resourceapi.OpCreate, nil, pres[i], actor); err != nil {
				return err
			}
			s.changed(tx, change{res: p.Resource, id: pres[i].ID(), created: true})
		}
		if err := s.recordEvent(ctx, tx, res, resourceapi.OpCreate, nil, out, actor); err != nil {
			return err
		}
		s.changed(tx, change{res: res, id: out.ID(), created: true})
		return nil
	})
	if err := s.identityMoved(err); err == resourceapi.ErrIdentityMoved {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", res.Singular, s.idempotentFailure(ctx, idem, err))
	}
	return out, nil
}

// CreateFirst creates rec, which must hold res's Retain value (the first
// admin), when no active record of res holds it, and reports whether it did.
// The check and the insert are one transaction under the Retain lock: of
// servers that start together on an empty database, whatever each was
// configured with, exactly one creates the record, and the others wait for
// it and then find it.
func (s *Store) CreateFirst(ctx context.Context, res *resourceapi.Resource, rec resourceapi.Record) (resourceapi.Record, bool, error) {
	if !res.Holds(rec) {
		return nil, false, fmt.Errorf("create first %s: the record does not hold %s", res.Singular, res.Retain.Value)
	}
	var out resourceapi.Record
	actor := resourceapi.ActorFrom(ctx) // the caller's: the writer's context may be another's
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.dialect.LockRetain(ctx, tx, res); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		n, err := s.holders(ctx, tx, res, 0)
		if err != nil || n > 0 {
			return err
		}
		if out, err = s.create(ctx, tx, res, rec); err != nil {
			return err
		}
		if err := s.recordEvent(ctx, tx, res, resourceapi.OpCreate, nil, out, actor); err != nil {
			return err
		}
		s.changed(tx, change{res: res, id: out.ID()})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("create first %s: %w", res.Singular, err)
	}
	return out, out != nil, nil
}

// Replace implements resourceapi.Store.
func (s *Store) Replace(ctx context.Context, res *resourceapi.Resource, id int64, rec resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, bool, error) {
	var out resourceapi.Record
	var created bool
	// Read from the caller's context: the writer's may be another.
	reuse := resourceapi.IDReuseAllowed(ctx)
	actor := resourceapi.ActorFrom(ctx) // the caller's: the writer's context may be another's
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		cur, err := s.current(ctx, tx, res, id, rec, cond, true)
		if err != nil {
			return err
		}
		created = cur == nil
		if created && !reuse {
			if err := s.checkFresh(ctx, tx, res, id); err != nil {
				return err
			}
		}
		op := resourceapi.OpReplace
		if created {
			// A PUT that creates the record publishes what a POST would.
			op = resourceapi.OpCreate
			out, err = s.insert(ctx, tx, res, id, rec, false)
		} else {
			out, err = s.update(ctx, tx, res, cur, rec)
		}
		if err != nil {
			return err
		}
		if err := s.recordEvent(ctx, tx, res, op, cur, out, actor); err != nil {
			return err
		}
		s.changed(tx, change{res: res, id: id})
		return nil
	})
	if err != nil {
		return nil, false, wrap(err, "replace %s %d", res.Singular, id)
	}
	return out, created, nil
}

// Update implements resourceapi.Store.
func (s *Store) Update(ctx context.Context, res *resourceapi.Resource, id int64, patch resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, error) {
	var out resourceapi.Record
	actor := resourceapi.ActorFrom(ctx) // the caller's: the writer's context may be another's
	idem := idempotencyOf(ctx)
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.idempotentBefore(ctx, tx, idem); err != nil {
			return err
		}
		// Where it can, the UPDATE goes with the read FOR UPDATE of the
		// record, in one round trip, before the record's conditions are
		// checked: a write they refuse is rolled back, the UPDATE with it
		// (updateAhead).
		var ahead *updateStatement
		if f, ok := tx.(Follower); ok && aheadable(res, patch) {
			u := s.updateQuery(res, id, nil, patch)
			if u.row, ok = f.QueryRowAfterNext(u.q.String(), u.q.args...); ok {
				ahead = u
			}
		}
		cur, err := s.current(ctx, tx, res, id, patch, cond, false)
		if err != nil {
			return err
		}
		if cur == nil {
			return notFound(res)
		}
		if ahead != nil {
			out, err = s.updated(ctx, tx, res, cur, ahead)
		} else {
			out, err = s.update(ctx, tx, res, cur, patch)
		}
		if err != nil {
			return err
		}
		if err := s.keepIdempotent(ctx, tx, idem, out); err != nil {
			return err
		}
		if err := s.confirmIdentity(ctx, tx); err != nil {
			return err
		}
		// The event last (see Create).
		if err := s.recordEvent(ctx, tx, res, resourceapi.OpUpdate, cur, out, actor); err != nil {
			return err
		}
		s.changed(tx, change{res: res, id: id, neutral: accessNeutral(res, patch)})
		return nil
	})
	if err := s.identityMoved(err); err == resourceapi.ErrIdentityMoved {
		return nil, err
	}
	if err != nil {
		return nil, wrap(s.idempotentFailure(ctx, idem, err), "update %s %d", res.Singular, id)
	}
	return out, nil
}

// Delete implements resourceapi.Store.
func (s *Store) Delete(ctx context.Context, res *resourceapi.Resource, id int64, cond resourceapi.Condition) error {
	actor := resourceapi.ActorFrom(ctx) // the caller's: the writer's context may be another's
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		cur, err := s.current(ctx, tx, res, id, nil, cond, false)
		if err != nil {
			return err
		}
		if cur == nil {
			return notFound(res)
		}
		if err := s.checkRetain(ctx, tx, res, cur, nil); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+res.Name+" WHERE id = "+s.dialect.Placeholder(1), id); err != nil {
			if s.dialect.ForeignKey(err) {
				return restricted(res)
			}
			return err
		}
		if err := s.recordEvent(ctx, tx, res, resourceapi.OpDelete, cur, nil, actor); err != nil {
			return err
		}
		s.changed(tx, change{res: res, id: id, whole: dependents(res)})
		return nil
	})
	if err != nil {
		return wrap(err, "delete %s %d", res.Singular, id)
	}
	return nil
}

// checkFresh fails with CodeConflict when id was held by a record of res
// that was deleted: its id is retired (the retired_ids table, which a
// trigger on each resource's table fills on every delete, cascades
// included), and only a Replace whose context allows it
// (resourceapi.WithIDReuse) gives it to a new record.
func (s *Store) checkFresh(ctx context.Context, tx Querier, res *resourceapi.Resource, id int64) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM retired_ids WHERE resource = "+s.dialect.Placeholder(1)+
		" AND id = "+s.dialect.Placeholder(2), res.Name, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("retired ids: %w", err)
	}
	return &resourceapi.Error{Code: resourceapi.CodeConflict,
		Message: fmt.Sprintf("The id %d belonged to a %s that was deleted; it is not given to a new one, except by an admin", id, res.Singular),
		Details: []resourceapi.FieldError{{Field: "id", Message: "was used by a deleted " + res.Singular}}}
}

// changed invalidates the cache's entries that ch may make stale. Each write
// calls it last in its transaction, when it has succeeded: it drops them
// before the commit can become visible, and (AfterEnd) refuses what reads
// that straddle the commit would store. A write that fails changes nothing
// and invalidates nothing.
func (s *Store) changed(tx Tx, ch change) {
	if s.accounts == nil && changesAccess(ch) {
		// Moved before the commit can be seen and again once it has ended,
		// like the cache's epochs: a session confirmed while the write was
		// in flight is confirmed again after it (accounts.go).
		s.identity.Add(1)
		tx.AfterEnd(func() { s.identity.Add(1) })
	}
	if s.cache == nil {
		return
	}
	s.cache.begin(ch)
	tx.AfterEnd(func() { s.cache.end(ch) })
}

// dependents returns the resources whose records the database deletes with a
// record of res (ON DELETE CASCADE), directly or through others: a delete
// changes them without naming them. They come from the declarations: every
// reference that is not Restrict cascades.
func dependents(res *resourceapi.Resource) []*resourceapi.Resource {
	var out []*resourceapi.Resource
	var walk func(r *resourceapi.Resource)
	walk = func(r *resourceapi.Resource) {
		for _, d := range resourceapi.Declared() {
			for _, f := range d.Fields {
				if f.References == r.Name && !f.Restrict && !slices.Contains(out, d) && d != res {
					out = append(out, d)
					walk(d)
				}
			}
		}
	}
	walk(res)
	return out
}

// restricted is the error of a delete that a restricting reference refuses
// (a product that orders list).
func restricted(res *resourceapi.Resource) error {
	var by []string
	for _, d := range resourceapi.Declared() {
		for _, f := range d.Fields {
			if f.Items == nil {
				continue
			}
			for _, sub := range f.Items.Fields {
				if sub.References == res.Name && sub.Restrict {
					by = append(by, d.Name)
				}
			}
		}
		for _, f := range d.Fields {
			if f.References == res.Name && f.Restrict {
				by = append(by, d.Name)
			}
		}
	}
	return resourceapi.Errorf(resourceapi.CodeConflict,
		"The %s is referred to by %s, which keep it: it cannot be deleted while they exist", res.Singular, strings.Join(by, ", "))
}

// current reads, and locks where the database needs it, the record a write
// is about to change (nil when absent), and checks cond against it. When the
// write could break the Retain invariant it takes the Retain lock first, so
// that the check that follows sees every committed change.
//
// insert says the write inserts the record when it is absent (Replace). Then
// the id is locked too: identical PUTs of an absent id (a client's retry)
// would otherwise each find no row to lock, each insert, and all but one fail
// with a conflict. Locked, the later ones wait for the first and then find its
// record: PUT stays idempotent, and a create-only PUT (If-None-Match: *) gets
// its precondition error.
//
// Every write takes the Retain lock, if at all, before any id lock, and id
// locks in increasing order (see create), so the locks cannot deadlock.
func (s *Store) current(ctx context.Context, tx Querier, res *resourceapi.Resource, id int64, change resourceapi.Record, cond resourceapi.Condition, insert bool) (resourceapi.Record, error) {
	if res.Retain != nil && touchesRetain(res, change) {
		if err := s.dialect.LockRetain(ctx, tx, res); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
	}
	if insert {
		if err := s.dialect.LockID(ctx, tx, res, id); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
	}
	cur, err := s.get(ctx, tx, res, id, s.dialect.ForUpdate(), nil)
	if err != nil {
		return nil, err
	}
	if cond != nil {
		if err := cond(cur); err != nil {
			return nil, conditionError{err}
		}
	}
	return cur, nil
}

// touchesRetain reports whether a write of change (nil for a delete) can
// change whether a record holds the Retain value.
func touchesRetain(res *resourceapi.Resource, change resourceapi.Record) bool {
	if change == nil {
		return true
	}
	_, roles := change[res.Retain.Field]
	_, deleted := change[res.SoftDelete]
	return roles || (res.SoftDelete != "" && deleted)
}

// checkRetain fails with CodeUnprocessable when turning before into after
// (nil: deleted) leaves no active record holding the Retain value.
func (s *Store) checkRetain(ctx context.Context, tx Querier, res *resourceapi.Resource, before, after resourceapi.Record) error {
	if !res.Holds(before) || res.Holds(after) {
		return nil
	}
	others, err := s.holders(ctx, tx, res, before.ID())
	if err != nil {
		return err
	}
	if others == 0 {
		return resourceapi.Errorf(resourceapi.CodeUnprocessable, "%s", res.Retain.Message)
	}
	return nil
}

// holders counts the active records of res, other than record except, that
// hold the Retain value.
func (s *Store) holders(ctx context.Context, tx Querier, res *resourceapi.Resource, except int64) (int, error) {
	q := s.newQuery()
	q.WriteString("SELECT count(*) FROM " + res.Name + " WHERE id <> " + q.Arg(except))
	if res.SoftDelete != "" {
		q.WriteString(" AND " + column(res.Field(res.SoftDelete)) + " = " + s.dialect.Bool(false))
	}
	q.WriteString(" AND " + s.dialect.Contains(q, column(res.Field(res.Retain.Field)), res.Retain.Value))
	var n int
	if err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", res.Retain.Value, err)
	}
	return n, nil
}

// create inserts rec under the next id of res's sequence and returns the
// stored record.
//
// Replace creates the ids its clients choose (900000000, or 2^53-1) and never
// moves the sequence: when it did, one PUT of resourceapi.MaxID stopped every
// later POST. So the sequence's next value may be taken; create then skips to
// the first free id after it, found in one query however long the run of
// taken ids, and moves the sequence past it. Every id create tries is locked
// (LockID) before its insert, so a concurrent Replace of the same id waits for
// this transaction or this one for it, and neither fails: whichever comes
// second finds the record (Replace updates it, create skips it). The ids it
// locks increase, as current's lock order requires. Creation fails only when
// no id up to MaxID is free after the sequence.
func (s *Store) create(ctx context.Context, tx Querier, res *resourceapi.Resource, rec resourceapi.Record) (resourceapi.Record, error) {
	return s.createPrepared(ctx, tx, s.prepareCreate(res, rec))
}

// prepareCreate builds the INSERT create starts with, which
// createPrepared runs: a write builds it before its transaction.
func (s *Store) prepareCreate(res *resourceapi.Resource, rec resourceapi.Record) *insertion {
	if inline, ok := s.dialect.(NextIDInline); ok {
		return s.prepareInsert(res, inline.NextIDExpr, rec, true)
	}
	return s.prepareInsert(res, nil, rec, true)
}

// createPrepared is create, with its first INSERT built by prepareCreate.
func (s *Store) createPrepared(ctx context.Context, tx Querier, in *insertion) (resourceapi.Record, error) {
	res := in.res
	var id int64
	if inline, ok := s.dialect.(NextIDInline); ok {
		// The id is taken by the INSERT itself: one statement, not two.
		out, err := s.runInsert(ctx, tx, in, 0)
		if err != nil || out != nil {
			return out, err
		}
		// The sequence's value was taken: continue from it as below.
		if id, err = inline.CurrentID(ctx, tx, res); err != nil {
			return nil, fmt.Errorf("next id: %w", err)
		}
		if id, err = s.freeIDAfter(ctx, tx, res, id); err != nil {
			return nil, fmt.Errorf("free id: %w", err)
		}
		if id <= resourceapi.MaxID {
			if err := s.dialect.LockID(ctx, tx, res, id); err != nil {
				return nil, fmt.Errorf("lock: %w", err)
			}
			if err := s.dialect.SkipID(ctx, tx, res, id); err != nil {
				return nil, fmt.Errorf("sequence: %w", err)
			}
		}
	} else {
		var err error
		if id, err = s.dialect.NextID(ctx, tx, res); err != nil {
			return nil, fmt.Errorf("next id: %w", err)
		}
	}
	for {
		if id > resourceapi.MaxID {
			return nil, resourceapi.Errorf(resourceapi.CodeUnprocessable,
				"No %s id is left: the ids that remain are above %d, which JSON clients cannot hold exactly", res.Singular, resourceapi.MaxID)
		}
		if !in.idArg {
			// The expression's INSERT cannot take a given id.
			in = s.prepareInsert(res, nil, in.rec, true)
		}
		out, err := s.runInsert(ctx, tx, in, id)
		if err != nil || out != nil {
			return out, err
		}
		// Each round takes a larger id, so this ends: at the latest when the
		// ids pass MaxID.
		if id, err = s.freeIDAfter(ctx, tx, res, id); err != nil {
			return nil, fmt.Errorf("free id: %w", err)
		}
		if id > resourceapi.MaxID {
			continue
		}
		if err := s.dialect.LockID(ctx, tx, res, id); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if err := s.dialect.SkipID(ctx, tx, res, id); err != nil {
			return nil, fmt.Errorf("sequence: %w", err)
		}
	}
}

// freeIDAfter returns the first id after taken that no record of res holds:
// the end of the run of consecutive ids that starts at taken. One query walks
// the run on the primary key, so a client that created a long run with PUT
// costs a scan of it, not a statement per id. It may return MaxID+1.
func (s *Store) freeIDAfter(ctx context.Context, tx Querier, res *resourceapi.Resource, taken int64) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT t.id + 1 FROM "+res.Name+" AS t WHERE t.id >= "+s.dialect.Placeholder(1)+
		" AND NOT EXISTS (SELECT 1 FROM "+res.Name+" AS u WHERE u.id = t.id + 1) ORDER BY t.id LIMIT 1", taken).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		// taken was deleted since, and no id after it is held.
		return taken + 1, nil
	}
	return id, err
}

// insert adds rec with the given id, taking declared defaults for absent
// fields, and returns the stored record. With ifFree, it inserts nothing and
// returns a nil record when the id is taken.
func (s *Store) insert(ctx context.Context, tx Querier, res *resourceapi.Resource, id int64, rec resourceapi.Record, ifFree bool) (resourceapi.Record, error) {
	return s.insertAs(ctx, tx, res, id, nil, rec, ifFree)
}

// insertAs is insert, with the id given by the expression idExpr returns
// for res when idExpr is not nil.
func (s *Store) insertAs(ctx context.Context, tx Querier, res *resourceapi.Resource, id int64, idExpr func(res *resourceapi.Resource) string, rec resourceapi.Record, ifFree bool) (resourceapi.Record, error) {
	return s.runInsert(ctx, tx, s.prepareInsert(res, idExpr, rec, ifFree), id)
}

// insertion is an INSERT of a record built before its transaction, in the
// caller's goroutine: on SQLite the one writer goroutine runs every write,
// and what it does not have to build, the other cores do. The id (unless
// an expression gives it) and the timestamps are bound when it runs.
type insertion struct {
	res    *resourceapi.Resource
	rec    resourceapi.Record
	text   string
	args   []any // args[0] the id's when idArg; the last two the timestamps
	idArg  bool
	ifFree bool
	values resourceapi.Record
	items  map[*resourceapi.Field][]resourceapi.Record
	read   *columns
}

// prepareInsert builds the INSERT of rec into res (see insertAs).
func (s *Store) prepareInsert(res *resourceapi.Resource, idExpr func(res *resourceapi.Resource) string, rec resourceapi.Record, ifFree bool) *insertion {
	in := &insertion{res: res, rec: rec, ifFree: ifFree, read: s.returnColumns(res)}
	q := s.newQuery()
	cols, vals := []string{"id"}, []string{""}
	if idExpr != nil {
		vals[0] = idExpr(res)
	} else {
		vals[0] = q.Arg(nil) // bound by runInsert
		in.idArg = true
	}
	in.values = make(resourceapi.Record, len(res.Fields))
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.ReadOnly && !f.Computed || f.Transient {
			continue
		}
		v, ok := rec[f.Name]
		if !ok {
			v = f.DefaultValue()
		}
		switch x := v.(type) {
		case resourceapi.IfCreated:
			v = x.Value
		case resourceapi.IfChanged:
			v = x.Value // a new record: everything changed
		}
		in.values[f.Name] = v
		if f.Type == resourceapi.TypeItems {
			if in.items == nil {
				in.items = make(map[*resourceapi.Field][]resourceapi.Record)
			}
			in.items[f], _ = v.([]resourceapi.Record)
			continue
		}
		for _, c := range writeColumns(f, v) {
			cols, vals = append(cols, c.name), append(vals, q.Arg(c.value))
		}
	}
	cols = append(cols, "created_at", "updated_at")
	vals = append(vals, q.Arg(nil), q.Arg(nil)) // bound by runInsert
	q.WriteString("INSERT INTO " + res.Name + " (" + join(cols) + ") VALUES (" + join(vals) + ")")
	if ifFree {
		q.WriteString(" ON CONFLICT (id) DO NOTHING")
	}
	q.WriteString(" RETURNING " + in.read.list)
	in.text, in.args = q.String(), q.args
	return in
}

// runInsert runs in in tx, with id unless an expression gives it, stamped
// now. With ifFree, it inserts nothing and returns a nil record when the id
// is taken.
func (s *Store) runInsert(ctx context.Context, tx Querier, in *insertion, id int64) (resourceapi.Record, error) {
	res := in.res
	if err := s.checkReferences(ctx, tx, res, in.values); err != nil {
		return nil, err
	}
	now := s.dialect.Value(resourceapi.Timestamp(s.now()))
	if in.idArg {
		in.args[0] = s.dialect.Value(id)
	}
	in.args[len(in.args)-2], in.args[len(in.args)-1] = now, now
	out, err := in.read.scan(tx.QueryRowContext(ctx, in.text, in.args...), nil)
	if in.ifFree && errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.writeError(res, err)
	}
	for f, list := range in.items {
		if err := s.writeItems(ctx, tx, res, f, out.ID(), list); err != nil {
			return nil, err
		}
		out[f.Name] = list
	}
	return out, nil
}

// checkReferences fails with CodeUnprocessable, naming each field, when rec
// refers to records that do not exist, in its own fields or its items'
// (items[2].product_id). The foreign keys would refuse the write too, but
// SQLite does not say which one failed; this way the client learns which
// field is wrong, on every database. (A referenced record deleted between
// this check and the commit is still refused, by the key.)
func (s *Store) checkReferences(ctx context.Context, tx Querier, res *resourceapi.Resource, rec resourceapi.Record) error {
	var details []resourceapi.FieldError
	for i := range res.Fields {
		f := &res.Fields[i]
		if items, ok := rec[f.Name].([]resourceapi.Record); ok && f.Items != nil {
			d, err := s.checkItemReferences(ctx, tx, f, items)
			if err != nil {
				return err
			}
			details = append(details, d...)
			continue
		}
		id, ok := rec[f.Name].(int64)
		if f.References == "" || !ok {
			continue
		}
		ref := resourceapi.ResourceNamed(f.References)
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM "+ref.Name+" WHERE id = "+s.dialect.Placeholder(1), id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			details = append(details, resourceapi.FieldError{Field: f.Name, Message: fmt.Sprintf("no %s has id %d", ref.Singular, id)})
			continue
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", f.Name, err)
		}
	}
	if len(details) > 0 {
		return &resourceapi.Error{Code: resourceapi.CodeUnprocessable, Message: "The " + res.Singular + " refers to records that do not exist", Details: details}
	}
	return nil
}

// checkItemReferences returns a detail for each reference of an item of
// field f that names no record: one query per referring item field, however
// many items there are.
func (s *Store) checkItemReferences(ctx context.Context, tx Querier, f *resourceapi.Field, items []resourceapi.Record) ([]resourceapi.FieldError, error) {
	var details []resourceapi.FieldError
	for j := range f.Items.Fields {
		sub := &f.Items.Fields[j]
		if sub.References == "" {
			continue
		}
		ref := resourceapi.ResourceNamed(sub.References)
		q := s.newQuery()
		var args []string
		seen := make(map[int64]bool, len(items))
		for _, item := range items {
			if id, ok := item[sub.Name].(int64); ok && !seen[id] {
				seen[id] = true
				args = append(args, q.Arg(id))
			}
		}
		if len(args) == 0 {
			continue
		}
		q.WriteString("SELECT id FROM " + ref.Name + " WHERE id IN (" + join(args) + ")")
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return nil, fmt.Errorf("check %s.%s: %w", f.Name, sub.Name, err)
		}
		found := make(map[int64]bool, len(seen))
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check %s.%s: %w", f.Name, sub.Name, err)
			}
			found[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check %s.%s: %w", f.Name, sub.Name, err)
		}
		for i, item := range items {
			if id, ok := item[sub.Name].(int64); ok && !found[id] {
				details = append(details, resourceapi.FieldError{Field: fmt.Sprintf("%s[%d].%s", f.Name, i, sub.Name),
					Message: fmt.Sprintf("no %s has id %d", ref.Singular, id)})
			}
		}
	}
	return details, nil
}

// writeItems replaces the items of record id's field f with items, in order.
func (s *Store) writeItems(ctx context.Context, tx Querier, res *resourceapi.Resource, f *resourceapi.Field, id int64, items []resourceapi.Record) error {
	decl := f.Items
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+decl.Table+" WHERE "+decl.Key+" = "+s.dialect.Placeholder(1), id); err != nil {
		return fmt.Errorf("write %s: %w", f.Name, err)
	}
	if len(items) == 0 {
		return nil
	}
	q := s.newQuery()
	cols := []string{decl.Key, "position"}
	for _, sub := range decl.Fields {
		cols = append(cols, sub.Name)
	}
	q.WriteString("INSERT INTO " + decl.Table + " (" + join(cols) + ") VALUES ")
	for i, item := range items {
		if i > 0 {
			q.WriteString(", ")
		}
		vals := []string{q.Arg(id), q.Arg(int64(i))}
		for _, sub := range decl.Fields {
			vals = append(vals, q.Arg(item[sub.Name]))
		}
		q.WriteString("(" + join(vals) + ")")
	}
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		if s.dialect.ForeignKey(err) {
			return &resourceapi.Error{Code: resourceapi.CodeUnprocessable,
				Message: fmt.Sprintf("The %s's %s refer to records that do not exist", res.Singular, f.Name)}
		}
		return fmt.Errorf("write %s: %w", f.Name, err)
	}
	return nil
}

// update writes the fields present in change over cur and returns the stored
// record.
func (s *Store) update(ctx context.Context, tx Querier, res *resourceapi.Resource, cur, change resourceapi.Record) (resourceapi.Record, error) {
	u := s.updateQuery(res, cur.ID(), cur, change)
	if err := s.checkRetain(ctx, tx, res, cur, u.after); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, tx, res, u.changed); err != nil {
		return nil, err
	}
	u.row = tx.QueryRowContext(ctx, u.q.String(), u.q.args...)
	return s.updated(ctx, tx, res, cur, u)
}

// updateStatement is the UPDATE of a record by a change, and once sent,
// its row.
type updateStatement struct {
	q       *Query
	read    *columns
	items   map[*resourceapi.Field][]resourceapi.Record
	changed resourceapi.Record // the fields the change writes
	after   resourceapi.Record // cur with the change written over it
	row     Row
}

// updateQuery builds the UPDATE that writes change over the record id of
// res, whose stored values are cur; cur may be nil when change depends on
// none of them (aheadable), and then after is too.
func (s *Store) updateQuery(res *resourceapi.Resource, id int64, cur, change resourceapi.Record) *updateStatement {
	u := &updateStatement{q: s.newQuery(), read: s.returnColumns(res), changed: make(resourceapi.Record, len(change))}
	if cur != nil {
		u.after = maps.Clone(cur)
	}
	q := u.q
	var sets []string
	for i := range res.Fields {
		f := &res.Fields[i]
		v, ok := change[f.Name]
		if (f.ReadOnly && !f.Computed) || f.Transient || !ok {
			continue
		}
		switch x := v.(type) {
		case resourceapi.IfCreated:
			continue // the record exists: keep what is stored
		case resourceapi.IfChanged:
			if !res.Changes(cur, change, x.Fields) {
				continue
			}
			v = x.Value
		}
		if u.after != nil {
			u.after[f.Name] = v
		}
		u.changed[f.Name] = v
		if f.Type == resourceapi.TypeItems {
			if u.items == nil {
				u.items = make(map[*resourceapi.Field][]resourceapi.Record)
			}
			u.items[f], _ = v.([]resourceapi.Record)
			continue
		}
		for _, c := range writeColumns(f, v) {
			sets = append(sets, c.name+" = "+q.Arg(c.value))
		}
	}
	now := q.Arg(resourceapi.Timestamp(s.now()))
	if cur == nil {
		// Stamped before the record's lock was taken: a write that took
		// it first may have stamped later. A record's versions keep
		// their order, as when the stamp follows the lock.
		sets = append(sets, "updated_at = GREATEST("+now+", updated_at)")
	} else {
		sets = append(sets, "updated_at = "+now)
	}
	q.WriteString("UPDATE " + res.Name + " SET " + join(sets) + " WHERE id = " + q.Arg(id) + " RETURNING " + u.read.list)
	return u
}

// aheadable reports whether a change to a record of res can be written
// before the record is read (Follower): what it writes depends on nothing
// stored (no IfChanged), and nothing needs checking before it is written
// (the Retain invariant, references, items of their own table).
func aheadable(res *resourceapi.Resource, change resourceapi.Record) bool {
	if res.Retain != nil && touchesRetain(res, change) {
		return false
	}
	for i := range res.Fields {
		f := &res.Fields[i]
		v, ok := change[f.Name]
		if !ok {
			continue
		}
		if f.Type == resourceapi.TypeItems || f.Items != nil || f.References != "" {
			return false
		}
		switch v.(type) {
		case resourceapi.IfChanged, resourceapi.IfCreated:
			return false
		}
	}
	return true
}

// updated reads the row of u, sent, and writes its items; it returns the
// stored record.
func (s *Store) updated(ctx context.Context, tx Querier, res *resourceapi.Resource, cur resourceapi.Record, u *updateStatement) (resourceapi.Record, error) {
	out, err := u.read.scan(u.row, nil)
	if err != nil {
		return nil, s.writeError(res, err)
	}
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.Type != resourceapi.TypeItems {
			continue
		}
		list, ok := u.items[f]
		if !ok {
			out[f.Name] = cur[f.Name] // unchanged
			continue
		}
		if err := s.writeItems(ctx, tx, res, f, out.ID(), list); err != nil {
			return nil, err
		}
		out[f.Name] = list
	}
	return out, nil
}

// writeError turns a unique violation into CodeConflict naming the field,
// and a violated reference into CodeUnprocessable.
func (s *Store) writeError(res *resourceapi.Resource, err error) error {
	if s.dialect.ForeignKey(err) {
		return resourceapi.Errorf(resourceapi.CodeUnprocessable, "The %s refers to a record that does not exist", res.Singular)
	}
	col, ok := s.dialect.Unique(err)
	if !ok {
		return err
	}
	for _, f := range res.Fields {
		if f.Unique && (col == "" || col == column(&f) || col == keyColumn(&f)) {
			return &resourceapi.Error{
				Code:    resourceapi.CodeConflict,
				Message: fmt.Sprintf("A %s with this %s already exists", res.Singular, f.Name),
				Details: []resourceapi.FieldError{{Field: f.Name, Message: "is already taken"}},
			}
		}
	}
	if col == "id" {
		return resourceapi.Errorf(resourceapi.CodeConflict, "A %s with this id already exists", res.Singular)
	}
	return resourceapi.Errorf(resourceapi.CodeConflict, "The %s conflicts with an existing one", res.Singular)
}

// conditionError carries a Condition's error out of a write transaction, to
// be returned to the caller exactly as the Condition returned it.
type conditionError struct{ err error }

func (e conditionError) Error() string { return e.err.Error() }

// wrap adds context to a write's error, except to a Condition's, which the
// Store contract returns unchanged.
func wrap(err error, format string, args ...any) error {
	var cond conditionError
	if errors.As(err, &cond) {
		return cond.err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

func notFound(res *resourceapi.Resource) error { return resourceapi.ErrNotFound(res) }
