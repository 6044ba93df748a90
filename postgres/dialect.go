package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// dialect is PostgreSQL's sqlstore.Dialect.
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

func (dialect) Placeholder(n int) string {
	if n > 0 && n < len(placeholders) {
		return placeholders[n]
	}
	return "$" + strconv.Itoa(n)
}

// placeholders are $1 to $63, made once: a write's statement has a dozen,
// each an allocation when concatenated anew.
var placeholders = func() (p [64]string) {
	for n := 1; n < len(p); n++ {
		p[n] = "$" + strconv.Itoa(n)
	}
	return p
}()

func (dialect) Value(v any) any { return v }

func (dialect) Bool(b bool) string { return strconv.FormatBool(b) }

// Search matches the records whose lower-cased copies of the searchable
// columns, in their search table (see schema.Search), match the pattern:
// the ids of SearchMatch's rows, an array (an InitPlan) that the record's
// table looks up by its primary key, or with its other filters' indexes.
// With id IN, a semi-join, the planner could instead walk the records'
// rows (by a filter's index, a role every user has) and look each one up
// in the search table by id, reading it all, when the trigram index's
// pending list made the index look dear (docs/performance.md, "pgpending");
// alone in its subquery, the search table has no path but the trigram
// index once sequential scans are priced out (pool.go, searchPlan).
func (d dialect) Search(q *sqlstore.Query, res *resourceapi.Resource, s string) string {
	return "id = ANY(ARRAY(SELECT id FROM " + SearchTable(res.Name) + " WHERE " + d.SearchMatch(q, res, s) + "))"
}

var _ sqlstore.SearchTable = dialect{}

// SearchTable implements sqlstore.SearchTable.
func (dialect) SearchTable(res *resourceapi.Resource) string { return SearchTable(res.Name) }

// SearchMatch implements sqlstore.SearchTable: the lower-cased copies of
// the searchable columns match the lower-cased pattern with LIKE, which is
// exactly ILIKE on a UTF-8 database (PostgreSQL's ILIKE lower-cases both
// sides with lower, then compares as LIKE) without lower-casing each row
// it checks: the recheck of the trigram index's matches cost about half.
// The pattern is lower-cased once per statement (an InitPlan): lower($1)
// itself, in a generic plan, is evaluated again for every row.
//
// A q in which pg_trgm finds no trigram (SearchIndexed) is matched with
// strpos instead, the same substring test in a form the trigram index
// cannot serve: its statement is another text, with a plan of its own
// (a scan of the search table), where LIKE would share the trigram
// index's generic plan, and the index, asked for a pattern without a
// trigram, reads every entry it holds (q=ab over 136,000 copies: 2.2 s
// against 83 ms for the scan).
func (dialect) SearchMatch(q *sqlstore.Query, res *resourceapi.Resource, s string) string {
	arg, match := sqlstore.LikePattern(s), func(col, p string) string { return col + " LIKE " + p }
	if !SearchIndexed(s) {
		arg, match = s, func(col, p string) string { return "strpos(" + col + ", " + p + ") > 0" }
	}
	p := "(SELECT lower(" + q.Arg(arg) + "))"
	var ors []string
	for _, col := range sqlstore.SearchColumns(res) {
		ors = append(ors, match(SearchColumn(col), p))
	}
	return "(" + strings.Join(ors, " OR ") + ")"
}

var _ sqlstore.SearchIndex = dialect{}

// SearchIndexed implements sqlstore.SearchIndex.
func (dialect) SearchIndexed(q string) bool { return SearchIndexed(q) }

// SearchIndexed reports whether the trigram indexes serve a search for q:
// whether pg_trgm surely finds a trigram in its LIKE pattern (%q%), which
// it does in three ASCII letters or digits in a row (it splits a pattern
// into words of letters and digits; a word between wildcards gives
// trigrams only from three characters on). Other patterns may have
// trigrams too (words ended by a space, letters outside ASCII in most
// locales); they are searched without the index, as a q of one or two
// characters must be.
func SearchIndexed(q string) bool {
	run := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			if run++; run == 3 {
				return true
			}
			continue
		}
		run = 0
	}
	return false
}

func (dialect) Contains(q *sqlstore.Query, column, value string) string {
	b := sqlstore.EncodeStrings([]string{value})
	return column + " @> " + q.Arg(b) + "::jsonb"
}

// Unique reads the column from the violation's detail:
// `Key (email_key)=(a@b.c) already exists.`
func (dialect) Unique(err error) (string, bool) {
	var e *pgconn.PgError
	if !errors.As(err, &e) || e.Code != "23505" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(e.Detail, "Key ("); ok {
		if i := strings.IndexByte(rest, ')'); i >= 0 {
			return rest[:i], true
		}
	}
	return "", true
}

// LockID takes a transaction-scoped advisory lock on the pair (resource, id),
// in the two-key space of advisory locks, apart from LockRetain's and the
// migrations' one-key locks.
func (dialect) LockID(ctx context.Context, tx sqlstore.Execer, res *resourceapi.Resource, id int64) error {
	_, err := tx.ExecContext(ctx, "SELECT "+lockID("$2::bigint"), res.Name, id)
	return err
}

// lockID returns the call that locks the id expression id of the resource
// named by $1. The id is hashed to 32 bits: two ids of a resource may share a
// lock, which only makes their writes wait for each other (two such
// collisions at once in one Create that skips ids could deadlock it with
// another, which PostgreSQL detects and ends by failing one of them).
func lockID(id string) string {
	return "pg_advisory_xact_lock(hashtext($1), hashint8(" + id + "))"
}

// NextID takes the identity sequence's next value and locks it in the same
// statement, one round trip.
func (dialect) NextID(ctx context.Context, tx sqlstore.Querier, res *resourceapi.Resource) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT n FROM nextval(pg_get_serial_sequence($1, 'id')) AS n, "+lockID("n")+" AS l", res.Name).Scan(&id)
	return id, err
}

var _ sqlstore.NextIDInline = dialect{}

// NextIDExpr implements sqlstore.NextIDInline: NextID's statement as a
// scalar subquery of the INSERT's VALUES, which PostgreSQL evaluates once,
// before the row is inserted. The sequence and the lock's first key are
// constants (SequenceName, hashtext of a literal), resolved when the
// statement is planned: pg_get_serial_sequence looked the sequence up in
// the catalog on every create (about 7 µs, 2.5% of PostgreSQL's CPU per
// POST; docs/performance.md, "lead").
func (dialect) NextIDExpr(res *resourceapi.Resource) string {
	return "(SELECT n FROM nextval(" + sqlstore.QuoteString(SequenceName(res.Name)) + "::regclass) AS n, " +
		"pg_advisory_xact_lock(hashtext(" + sqlstore.QuoteString(res.Name) + "), hashint8(n)) AS l)"
}

// SequenceName is the name of the sequence of the identity column id of
// table: PostgreSQL names it so when the table is created (migration 1 and
// the schema generator declare every id GENERATED BY DEFAULT AS IDENTITY);
// TestSequenceNames checks it for every declared resource.
func SequenceName(table string) string { return table + "_id_seq" }

// CurrentID implements sqlstore.NextIDInline: currval is the session's
// last nextval of the sequence.
func (dialect) CurrentID(ctx context.Context, tx sqlstore.Querier, res *resourceapi.Resource) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT currval(pg_get_serial_sequence($1, 'id'))", res.Name).Scan(&id)
	return id, err
}

// SkipID moves the identity sequence past id, under a lock so that
// concurrent moves never go backwards. (A nextval between the read and the
// write of the sequence in setval's statement can still hand out a value
// twice; Create's id lock and its skipping of taken ids make that harmless.)
func (dialect) SkipID(ctx context.Context, tx sqlstore.Execer, res *resourceapi.Resource, id int64) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", res.Name+".id"); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `
		SELECT setval(s, GREATEST($1::bigint, COALESCE(pg_sequence_last_value(s::regclass), 0)))
		FROM pg_get_serial_sequence($2, 'id') AS s`, id, res.Name)
	return err
}

// LockRetain takes a transaction-scoped advisory lock, so that two writes
// that each remove one of the last two admins run one after the other and the
// second sees the first.
func (dialect) LockRetain(ctx context.Context, tx sqlstore.Execer, res *resourceapi.Resource) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", res.Name+".retain")
	return err
}

// ForUpdate locks the record a write reads, so that concurrent conditional
// writes to it (If-Match) run one after the other and only one can win.
func (dialect) ForUpdate() string { return " FOR UPDATE" }

func (dialect) OrderBy(column string, _ bool) string { return column }

// IDsFirst implements sqlstore.IDsFirst: searches collect their matches
// through the trigram index and deep pages walk their offset in an index,
// before the page's rows are read.
func (dialect) IDsFirst() bool { return true }

// RowEstimate implements sqlstore.IDsFirst: the planner's count of the
// table's rows, from its last vacuum or analyze (-1 before any, read as 0).
func (dialect) RowEstimate(table string) string {
	return "(SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = " + sqlstore.QuoteString(table) + "::regclass)"
}

// LateralEach implements sqlstore.LateralEach.
func (dialect) LateralEach() bool { return true }

// Permissions unions the user's grants with those of their roles.
func (dialect) Permissions(u string) string {
	return "(SELECT coalesce(jsonb_agg(p), '[]'::jsonb) FROM (" +
		"SELECT jsonb_array_elements_text(" + u + ".permissions) AS p UNION " +
		"SELECT jsonb_array_elements_text(r.permissions) FROM roles r WHERE " + u + ".roles ? r.name) AS x)"
}

// ObjectArray aggregates rows into a JSON array of objects.
func (dialect) ObjectArray(keyValues, orderBy string) string {
	return "coalesce(json_agg(json_build_object(" + keyValues + ") ORDER BY " + orderBy + "), '[]'::json)"
}

// ForeignKey reports foreign key violations (SQLSTATE 23503).
func (dialect) ForeignKey(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23503"
}

// IndexedBy is "": PostgreSQL plans by its statistics.
func (dialect) IndexedBy(index string) string { return "" }

// SkipLocked lets the relays of several instances claim distinct events.
func (dialect) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

// Lock is a transaction-scoped advisory lock on the hash of name: relays
// on several instances publish one batch after another, in id order, and
// fan out events one transaction after another. name is one of the
// store's constants, never input.
func (dialect) Lock(name string) string {
	return "SELECT pg_advisory_xact_lock(hashtext('" + name + "'))"
}

var _ sqlstore.EventPayloadText = dialect{}

// EventPayloadColumn is the text column of the payloads this version
// records (migration 00048), which no insert parses as JSON.
func (dialect) EventPayloadColumn() string { return "payload_text" }

// EventPayload reads an event's payload from either column: the events
// recorded before migration 00048 have theirs in payload, as jsonb.
func (dialect) EventPayload() string { return "coalesce(payload_text, payload::text)" }

var _ sqlstore.EventHorizon = dialect{}

// EstablishHorizon runs events_establish_horizon (migration 00028): it
// waits, on the lock writers hold shared while they take an event id, for
// the transactions of the ids taken so far, and records the last id.
func (dialect) EstablishHorizon() string { return "SELECT events_establish_horizon()" }

// Horizon is the last horizon recorded, in a sequence (migration 00028).
func (dialect) Horizon() string { return "(SELECT last_value FROM events_horizon)" }

// IdentityVersion reads the identity_version row, which triggers move on
// with every change of a user, an API key or a role (migration 00007).
func (dialect) IdentityVersion() string { return "(SELECT version FROM identity_version)" }

var _ sqlstore.IdentityConfirm = dialect{}

// ConfirmIdentity fails with SQLSTATE RA001 unless the identity version is
// $1: it reads the version itself and calls identity_moved, which raises
// the error, only when it differs (migration 00046), where
// identity_confirm (00035) was a PL/pgSQL call and a query of its own on
// every confirmed write.
func (dialect) ConfirmIdentity() string {
	return "SELECT identity_moved($1) WHERE (SELECT version FROM identity_version) IS DISTINCT FROM $1"
}

// IdentityMoved reports ConfirmIdentity's failure (SQLSTATE RA001).
func (dialect) IdentityMoved(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "RA001"
}

// Unavailable reports the errors of a server that cannot be reached or is
// not accepting work: a connection that could not be made (refused, or the
// server answered 57P03 "the database system is starting up") or that broke,
// SQLSTATE class 08 (connection exception), 57P01 admin_shutdown (a fast
// shutdown or a restart ended the session, or pg_terminate_backend),
// 57P02 crash_shutdown, 57P03 cannot_connect_now and 53300
// too_many_connections.
func (dialect) Unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"),
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", pgErr.Code == "53300":
			return true
		}
		return false // the server answered: the statement itself failed
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		pgconn.SafeToRetry(err) || errors.Is(err, pgconn.ErrConnClosed)
}
