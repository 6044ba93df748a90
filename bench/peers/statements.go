package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// statements: what PostgreSQL ran for a workload, from its log.
//
// bench/statements.sh sets log_min_duration_statement = 0 on the database
// measured, sends a workload's request a few times, and hands this command
// the log lines of that database. Each entry is one message of the protocol:
// "parse" and "bind" of a prepared statement, then "execute"; "statement" is
// a simple query (BEGIN, COMMIT). A round trip ends with each execute or
// simple statement (pgx sends Bind and Execute together, and prepares a
// statement, Parse and Describe, in a round trip of its own the first time a
// connection runs it).

// logEntry is one "duration:" message of the log.
type logEntry struct {
	kind   string // parse, bind, execute, statement
	ms     float64
	sql    string
	params string // the DETAIL's "parameters: ..." list, without that prefix
}

var (
	logStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	duration = regexp.MustCompile(`(?s)LOG:  duration: ([0-9.]+) ms  (parse|bind|execute|statement)( [^:]*)?: (.*)$`)
	detail   = regexp.MustCompile(`DETAIL:  parameters: (.*)$`)
)

// parseLog reads log lines (of one database) into entries. A line that does
// not start with a timestamp continues the previous one (a statement of
// several lines).
func parseLog(r io.Reader) ([]logEntry, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !logStart.MatchString(line) && len(lines) > 0 {
			lines[len(lines)-1] += "\n" + strings.TrimLeft(line, "\t")
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []logEntry
	for _, line := range lines {
		if m := duration.FindStringSubmatch(line); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			out = append(out, logEntry{kind: m[2], ms: ms, sql: strings.TrimSpace(m[4])})
			continue
		}
		if m := detail.FindStringSubmatch(line); m != nil && len(out) > 0 && out[len(out)-1].params == "" {
			out[len(out)-1].params = m[1]
		}
	}
	return out, nil
}

// splitParams splits "$1 = '42', $2 = NULL" into its values ("'42'",
// "NULL"), in order, quotes kept.
func splitParams(s string) ([]string, error) {
	var vals []string
	for s != "" {
		s = strings.TrimLeft(s, ", ")
		_, rest, ok := strings.Cut(s, " = ")
		if !ok || !strings.HasPrefix(s, "$") {
			return nil, fmt.Errorf("parameters %q: no $n = value", s)
		}
		s = rest
		if strings.HasPrefix(s, "NULL") {
			vals = append(vals, "NULL")
			s = s[len("NULL"):]
			continue
		}
		if !strings.HasPrefix(s, "'") {
			return nil, fmt.Errorf("parameters: value %q is not quoted", s)
		}
		i := 1
		for {
			j := strings.IndexByte(s[i:], '\'')
			if j < 0 {
				return nil, errors.New("parameters: unterminated value")
			}
			i += j + 1
			if i < len(s) && s[i] == '\'' { // '' is a quote inside the value
				i++
				continue
			}
			break
		}
		vals = append(vals, s[:i])
		s = s[i:]
	}
	return vals, nil
}

// statementStats is what one distinct statement cost over the requests.
type statementStats struct {
	sql      string
	executes int
	ms       float64 // of its executes
	params   string  // of its first execute
}

func statementsCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("statements", flag.ContinueOnError)
	fs.SetOutput(stderr)
	requests := fs.Int("requests", 1, "how many requests the log lines are of")
	explain := fs.String("explain", "", "write to `FILE` a psql script that runs EXPLAIN (ANALYZE, BUFFERS) on each statement with its first parameters, with a custom plan and with a generic one (writes are rolled back)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	entries, err := parseLog(stdin)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	var stats []*statementStats
	byText := map[string]*statementStats{}
	for _, e := range entries {
		counts[e.kind]++
		if e.kind != "execute" && e.kind != "statement" {
			continue
		}
		st := byText[e.sql]
		if st == nil {
			st = &statementStats{sql: e.sql, params: e.params}
			byText[e.sql] = st
			stats = append(stats, st)
		}
		st.executes++
		st.ms += e.ms
	}
	n := float64(max(*requests, 1))
	fmt.Fprintf(stdout, "per request: %.2f round trips (%.2f executes of prepared statements, %.2f simple statements), %.2f prepares (first use on a connection)\n",
		float64(counts["execute"]+counts["statement"]+counts["parse"])/n, float64(counts["execute"])/n, float64(counts["statement"])/n, float64(counts["parse"])/n)
	slices.SortStableFunc(stats, func(a, b *statementStats) int { return b.executes - a.executes })
	for _, st := range stats {
		fmt.Fprintf(stdout, "  %5.2f/request  %7.3f ms each  %s\n", float64(st.executes)/n, st.ms/float64(st.executes), shorten(st.sql, 400))
	}
	if *explain == "" {
		return nil
	}
	f, err := os.Create(*explain)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for i, st := range stats {
		verb := strings.ToUpper(strings.Fields(st.sql + " x")[0])
		if !slices.Contains([]string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"}, verb) {
			continue
		}
		params, err := splitParams(st.params)
		if err != nil {
			return fmt.Errorf("statement %q: %w", shorten(st.sql, 80), err)
		}
		exec := fmt.Sprintf("EXECUTE s%d", i)
		if len(params) > 0 {
			exec += "(" + strings.Join(params, ", ") + ")"
		}
		fmt.Fprintf(w, "\\echo '=== statement %d, %d per request: %s'\n", i, st.executes/max(*requests, 1), strings.ReplaceAll(shorten(st.sql, 300), "'", ""))
		fmt.Fprintf(w, "BEGIN;\nPREPARE s%d AS %s;\n", i, st.sql)
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			fmt.Fprintf(w, "\\echo '--- %s'\nSET LOCAL plan_cache_mode = %s;\nEXPLAIN (ANALYZE, BUFFERS) %s;\n", mode, mode, exec)
		}
		fmt.Fprintf(w, "ROLLBACK;\n")
	}
	return w.Flush()
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
