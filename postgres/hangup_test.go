package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestHangUps has callers give up (their context cancelled, as net/http does
// when a client hangs up) at random moments of reads and writes, and checks
// that none of it costs the pool a connection (every session the store opens
// goes through a proxy that counts them: a pool of 4 opens at most 4) and
// that no write is left half done (every userCreated has its event, every
// event its user). Before the store detached its statements from the
// caller's context, pgx closed the connection of each statement a cancel
// interrupted, and the pool opened new sessions for the next requests.
func TestHangUps(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	proxy, proxied := pgtest.NewProxy(t, url)
	const conns = 4
	db, err := postgres.Open(ctx, proxied, postgres.Options{MaxConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 100 {
		mustCreateUser(t, db, fmt.Sprintf("User %03d", i), fmt.Sprintf("user%03d@example.com", i))
	}

	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for n := range 40 {
				cctx, cancel := context.WithCancel(ctx)
				// Hang up at any moment: before the call, during it, or after.
				timer := time.AfterFunc(time.Duration(r.IntN(10000))*time.Microsecond, cancel)
				switch n % 4 {
				case 0:
					db.Get(cctx, resourceapi.Users, 1+r.Int64N(100))
				case 1:
					db.List(cctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Offset: r.IntN(80), Search: "user0"})
				case 2:
					rec := resourceapi.Record{"name": fmt.Sprintf("Hangup %d-%d", w, n), "email": fmt.Sprintf("hangup-%d-%d@example.com", w, n)}
					if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
						t.Error(err)
					}
					db.Create(cctx, resourceapi.Users, rec)
				case 3:
					db.Update(cctx, resourceapi.Users, 1+r.Int64N(100), resourceapi.Record{"age": int64(18 + r.IntN(60))}, nil)
				}
				timer.Stop()
				cancel()
			}
		})
	}
	wg.Wait()

	// The store still answers, on the connections it had.
	if _, err := db.Get(ctx, resourceapi.Users, 1); err != nil {
		t.Fatalf("Get after the hang-ups: %v", err)
	}
	if got := proxy.Accepted(); got > conns {
		t.Errorf("the store opened %d sessions, want at most %d (its pool): hang-ups closed connections", got, conns)
	}

	admin := mustAdmin(t, url)
	var users, events, orphans int
	if err := admin.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM users WHERE email LIKE 'hangup-%'),
		(SELECT count(*) FROM events e JOIN users u ON u.id = e.record_id WHERE e.resource = 'users' AND e.payload_text::jsonb->>'email' = u.email AND u.email LIKE 'hangup-%'),
		(SELECT count(*) FROM events e WHERE e.resource = 'users' AND e.payload_text::jsonb->>'email' LIKE 'hangup-%' AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = e.record_id))`,
	).Scan(&users, &events, &orphans); err != nil {
		t.Fatal(err)
	}
	if users != events || orphans != 0 {
		t.Errorf("%d users created by callers that hung up, %d events of their creation, %d events without their user: want equal counts and none", users, events, orphans)
	}
	t.Logf("%d of %d creates committed; %d sessions opened", users, 32*10, proxy.Accepted())
}
