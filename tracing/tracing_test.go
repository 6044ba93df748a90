package tracing

import "testing"

func TestStatementName(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT id, (SELECT coalesce(sum(n), 0) FROM row_counts WHERE x) FROM users WHERE deleted = 0":                                 "SELECT users",
		"SELECT u.id, (SELECT json_group_array(p) FROM (SELECT value AS p FROM json_each(u.permissions))) FROM users u WHERE u.id = ?": "SELECT users",
		`INSERT INTO events (name) VALUES ($1)`: "INSERT events",
		`UPDATE "posts" SET a = 1`:              "UPDATE posts",
		"DELETE FROM api_keys WHERE id = ?":     "DELETE api_keys",
		"BEGIN IMMEDIATE":                       "BEGIN",
		"SELECT 1":                              "SELECT",
		"":                                      "SQL",
	} {
		if got := statementName(q); got != want {
			t.Errorf("statementName(%q) = %q, want %q", q, got, want)
		}
	}
}
