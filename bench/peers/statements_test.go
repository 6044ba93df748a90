package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Lines as PostgreSQL 15 logs them with log_min_duration_statement = 0 and
// the default log_line_prefix of Debian ('%m [%p] %q%u@%d ').
const sampleLog = `2026-11-25 07:10:01.100 UTC [11] root@db LOG:  duration: 0.050 ms  parse stmtcache_1: SELECT name FROM users WHERE id = $1
2026-11-25 07:10:01.101 UTC [11] root@db LOG:  duration: 0.020 ms  bind stmtcache_1: SELECT name FROM users WHERE id = $1
2026-11-25 07:10:01.101 UTC [11] root@db DETAIL:  parameters: $1 = '42'
2026-11-25 07:10:01.102 UTC [11] root@db LOG:  duration: 0.300 ms  execute stmtcache_1: SELECT name FROM users WHERE id = $1
2026-11-25 07:10:01.102 UTC [11] root@db DETAIL:  parameters: $1 = '42'
2026-11-25 07:10:01.200 UTC [12] root@db LOG:  duration: 0.010 ms  statement: begin
2026-11-25 07:10:01.201 UTC [12] root@db LOG:  duration: 0.500 ms  execute stmtcache_2: UPDATE users
		SET name = $1, age = $2 WHERE id = $3
2026-11-25 07:10:01.201 UTC [12] root@db DETAIL:  parameters: $1 = 'O''Brien, $2 = x', $2 = NULL, $3 = '7'
2026-11-25 07:10:01.202 UTC [12] root@db LOG:  duration: 2.000 ms  statement: commit
2026-11-25 07:10:01.300 UTC [11] root@db LOG:  duration: 0.100 ms  execute stmtcache_1: SELECT name FROM users WHERE id = $1
2026-11-25 07:10:01.300 UTC [11] root@db DETAIL:  parameters: $1 = '43'
`

func TestParseLog(t *testing.T) {
	entries, err := parseLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range entries {
		kinds = append(kinds, e.kind)
	}
	if want := []string{"parse", "bind", "execute", "statement", "execute", "statement", "execute"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if got, want := entries[4].sql, "UPDATE users\nSET name = $1, age = $2 WHERE id = $3"; got != want {
		t.Errorf("statement of two lines: %q, want %q", got, want)
	}
	if got, want := entries[2].params, "$1 = '42'"; got != want {
		t.Errorf("params %q, want %q", got, want)
	}
}

func TestSplitParams(t *testing.T) {
	got, err := splitParams(`$1 = 'O''Brien, $2 = x', $2 = NULL, $3 = '7'`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`'O''Brien, $2 = x'`, "NULL", "'7'"}; !slices.Equal(got, want) {
		t.Errorf("splitParams = %q, want %q", got, want)
	}
	for _, bad := range []string{`$1 = 'open`, `$1 = 42`, `nonsense`} {
		if _, err := splitParams(bad); err == nil {
			t.Errorf("splitParams(%q) succeeded", bad)
		}
	}
}

func TestStatementsCommand(t *testing.T) {
	script := filepath.Join(t.TempDir(), "explain.sql")
	var out bytes.Buffer
	err := statementsCommand([]string{"-requests", "2", "-explain", script}, strings.NewReader(sampleLog), &out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	// 3 executes + 2 simple statements + 1 parse over 2 requests.
	if want := "per request: 3.00 round trips (1.50 executes of prepared statements, 1.00 simple statements), 0.50 prepares"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	if want := " 1.00/request    0.200 ms each  SELECT name FROM users WHERE id = $1"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	sql := string(b)
	for _, want := range []string{
		"PREPARE s0 AS SELECT name FROM users WHERE id = $1;",
		"EXPLAIN (ANALYZE, BUFFERS) EXECUTE s0('42');",
		"SET LOCAL plan_cache_mode = force_generic_plan;",
		"EXECUTE s2('O''Brien, $2 = x', NULL, '7');",
		"ROLLBACK;",
	} {
		if !strings.Contains(sql, want) {
			t.Errorf("script lacks %q:\n%s", want, sql)
		}
	}
	if strings.Contains(sql, "PREPARE s2 AS begin") || strings.Contains(strings.ToLower(sql), "as commit") {
		t.Errorf("script explains BEGIN or COMMIT:\n%s", sql)
	}
}
