// Command scale measures how the cost of list queries grows with the number
// of users, directly against a store (no HTTP, no cache), so the figures show
// the database's share alone.
//
//	go run ./bench/scale -sizes 10000,100000,1000000
//	go run ./bench/scale -postgres 'postgres://root@127.0.0.1:5432/test?sslmode=disable'
//
// For each size it grows one database to that many users, then times each
// query shape: the first page, a middle page and the last page of the default
// list (with its total), a selective search sorted by name, and a role filter.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
)

type store interface {
	resourceapi.Store
	Close() error
}

func main() {
	sizes := flag.String("sizes", "10000,100000,1000000", "comma-separated numbers of users")
	pg := flag.String("postgres", "", "PostgreSQL server URL; a fresh database is created and dropped (default: SQLite in a temporary directory)")
	runs := flag.Int("runs", 50, "timed runs per query")
	flag.Parse()
	if err := run(*sizes, *pg, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(sizes, pgURL string, runs int) error {
	ctx := context.Background()
	db, cleanup, err := open(ctx, pgURL)
	if err != nil {
		return err
	}
	defer cleanup()
	defer db.Close()

	have := 0
	fmt.Printf("%-9s %-28s %10s %10s\n", "users", "query", "median", "p90")
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("size %q: %w", s, err)
		}
		start := time.Now()
		if err := seed(ctx, db, have, n); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "seeded %d users in %s\n", n-have, time.Since(start).Round(time.Millisecond))
		have = max(have, n)
		pages := have / resourceapi.DefaultLimit
		for _, c := range []struct {
			name string
			q    url.Values
		}{
			{"page 1", url.Values{}},
			{"middle page", url.Values{"page": {strconv.Itoa(pages / 2)}}},
			{"last page", url.Values{"page": {strconv.Itoa(pages)}}},
			{"q=user00042 sort=name desc", url.Values{"q": {fmt.Sprintf("user%05d", 42%have)}, "sort": {"name"}, "order": {"desc"}}},
			{"role=admin", url.Values{"role": {"admin"}}},
			{"sort=email page 1", url.Values{"sort": {"email"}}},
		} {
			lq, err := rhttp.ParseListQuery(resourceapi.Users, c.q)
			if err != nil {
				return err
			}
			times := make([]time.Duration, runs)
			for i := range times {
				t0 := time.Now()
				if _, err := db.List(ctx, resourceapi.Users, lq); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				times[i] = time.Since(t0)
			}
			slices.Sort(times)
			fmt.Printf("%-9d %-28s %10s %10s\n", have, c.name, times[len(times)/2].Round(time.Microsecond), times[len(times)*9/10].Round(time.Microsecond))
		}
	}
	return nil
}

func open(ctx context.Context, pgURL string) (store, func(), error) {
	if pgURL == "" {
		dir, err := os.MkdirTemp("", "resourceapi-scale-")
		if err != nil {
			return nil, nil, err
		}
		db, err := sqlite.Open(ctx, filepath.Join(dir, "scale.db"), sqlite.Options{CacheRecords: -1, Sync: sqlite.SyncNormal})
		return db, func() { os.RemoveAll(dir) }, err
	}
	admin, err := sql.Open("pgx", pgURL)
	if err != nil {
		return nil, nil, err
	}
	name := fmt.Sprintf("resourceapi_scale_%d", time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close()
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	u.Path = "/" + name
	db, err := postgres.Open(ctx, u.String(), postgres.Options{})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return db, cleanup, nil
}

// seed creates users from..to-1 through the store, concurrently so that
// writes share commits. One user in 1,000 is an admin.
func seed(ctx context.Context, db resourceapi.Store, from, to int) error {
	const workers = 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := from + w; i < to; i += workers {
				roles := []string{resourceapi.RoleUser}
				if i%1000 == 0 {
					roles = []string{resourceapi.RoleAdmin}
				}
				rec := resourceapi.Record{
					"name":  fmt.Sprintf("User %05d", i),
					"email": fmt.Sprintf("user%05d@example.com", i),
					"age":   int64(i % 100),
					"roles": roles,
				}
				if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
