package oauth_test

import (
	"testing"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestMain runs the tests and drops the PostgreSQL template they copied
// their databases from (pgtest.Migrated).
func TestMain(m *testing.M) { pgtest.Main(m) }
