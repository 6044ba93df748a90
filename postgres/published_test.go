package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// eventRows returns each event row's id, place and transaction marks
// (ctid, xmin, xmax): a row updated or locked since has others.
func eventRows(t *testing.T, url string) []string {
	t.Helper()
	rows, err := mustAdmin(t, url).Query("SELECT id::text || ' ' || ctid::text || ' ' || xmin::text || ' ' || xmax::text FROM events ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// publishAll publishes what db's outbox holds, in batches of limit, and
// returns the ids handed out.
func publishAll(t *testing.T, db *postgres.DB, limit int) []int64 {
	t.Helper()
	var ids []int64
	for {
		n, err := db.PublishEvents(context.Background(), limit, func(_ context.Context, evs []resourceapi.Event) error {
			for _, ev := range evs {
				ids = append(ids, ev.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < limit {
			return ids
		}
	}
}

// TestPublishingWritesNoEventRow: the relay publishes events without
// writing their rows (no claim's lock, no mark: migration 00047's cursor
// moves instead), and what it published is not handed out again. With
// the marks (UPDATE events SET published_at) every row had a new version.
func TestPublishingWritesNoEventRow(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	for _, name := range []string{"Ada", "Brian", "Claude"} {
		mustCreateIn(t, db, resourceapi.Users, resourceapi.Record{"name": name, "email": strings.ToLower(name) + "@example.com"})
	}
	before := eventRows(t, url)
	if len(before) < 3 {
		t.Fatalf("%d events in the outbox, want at least 3", len(before))
	}
	ids := publishAll(t, db, 2)
	if len(ids) != len(before) {
		t.Fatalf("published %d events, want %d", len(ids), len(before))
	}
	if after := eventRows(t, url); !slices.Equal(after, before) {
		t.Fatalf("event rows after publishing:\n%s\nwant them untouched:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	var through int64
	if err := mustAdmin(t, url).QueryRow("SELECT through FROM events_published").Scan(&through); err != nil || through != ids[len(ids)-1] {
		t.Fatalf("cursor at %d, %v; want %d, the last published", through, err, ids[len(ids)-1])
	}
	if again := publishAll(t, db, 10); len(again) != 0 {
		t.Fatalf("published %v again", again)
	}
}

// TestEventsPublishedMigration runs migration 00047 on an outbox that its
// Down left with published marks (the first two events published, the
// others not): the cursor is placed after the published ones, and the
// relay hands out the others, each once.
func TestEventsPublishedMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Ada", "Brian", "Claude", "Dennis"} {
		mustCreateIn(t, db, resourceapi.Users, resourceapi.Record{"name": name, "email": strings.ToLower(name) + "@example.com"})
	}
	all := publishAll(t, db, 100)
	if len(all) < 4 {
		t.Fatalf("published %d events, want at least 4", len(all))
	}
	db.Close()

	// Back to 46, with the last two events unpublished: the Downs of 47
	// and of every later migration, the latest first.
	kept := all[len(all)-2:]
	back := append([]string{"UPDATE events_published SET through = " + strconv.FormatInt(kept[0]-1, 10)}, downsFrom(t, 47)...)
	admin := mustAdmin(t, url)
	for _, q := range back {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var marked int
	if err := admin.QueryRow("SELECT count(*) FROM events WHERE published_at IS NOT NULL").Scan(&marked); err != nil || marked != len(all)-2 {
		t.Fatalf("after the Down, %d events marked published, %v; want %d", marked, err, len(all)-2)
	}

	db, err = postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := publishAll(t, db, 100); !slices.Equal(got, kept) {
		t.Fatalf("after the migration, published %v; want %v, the unpublished ones", got, kept)
	}
}

// TestEventPayloadIsText: an event's payload is stored as text (migration
// 00048), never parsed as jsonb, and an event recorded with a jsonb payload
// (by a version before it) is still published with its record.
func TestEventPayloadIsText(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	ada := mustCreateIn(t, db, resourceapi.Users, resourceapi.Record{"name": "Ada", "email": "ada@example.com"})
	admin := mustAdmin(t, url)
	var jsonb bool
	var text string
	if err := admin.QueryRow("SELECT payload IS NOT NULL, payload_text FROM events WHERE resource = 'users' AND record_id = $1", ada.ID()).Scan(&jsonb, &text); err != nil {
		t.Fatal(err)
	}
	if jsonb || !strings.Contains(text, `"email":"ada@example.com"`) {
		t.Fatalf("payload set: %v, payload_text %q; want no jsonb and the record as text", jsonb, text)
	}
	// As a version before 00048 records an event: jsonb, no text.
	if _, err := admin.Exec(`INSERT INTO events (name, alias, actor, resource, record_id, payload, created_at)
		SELECT 'users.updated', '', actor, resource, record_id, payload_text::jsonb, created_at FROM events WHERE record_id = $1`, ada.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("INSERT INTO events (name, resource, record_id, created_at) VALUES ('users.updated', 'users', 1, now())"); err == nil {
		t.Fatal("an event without a payload was recorded")
	}
	var got []resourceapi.Event
	if _, err := db.PublishEvents(context.Background(), 100, func(_ context.Context, evs []resourceapi.Event) error {
		got = append(got, evs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var records []string
	for _, ev := range got {
		if ev.Resource == "users" && ev.Record.ID() == ada.ID() {
			records = append(records, fmt.Sprint(ev.Name, " ", ev.Record["email"]))
		}
	}
	if want := []string{"users.created ada@example.com", "users.updated ada@example.com"}; !slices.Equal(records, want) {
		t.Fatalf("published %v; want %v", records, want)
	}
}
