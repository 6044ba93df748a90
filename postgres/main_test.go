package postgres_test

import (
	"os"
	"testing"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestMain runs the tests and drops the PostgreSQL template they copied
// their databases from (pgtest.Migrated): without it every run of this
// package left one database behind on the server.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.DropTemplate()
	os.Exit(code)
}
