package http

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// accessLineCases are attribute values that slog's handlers write in every
// way they have: bare and quoted, escaped, invalid UTF-8, Unicode spaces
// and non-printing characters, empty values.
var accessLineCases = []accessFields{
	{id: "0b8e1c2a9f7d4e11", method: "GET", path: "/api/users/42", status: 200, bytes: 312, duration: 84 * time.Microsecond, remote: "127.0.0.1:53412", agent: "wrk"},
	{},
	{id: "a b", method: "G=T", path: `/a"b\c`, status: -1, bytes: -7, duration: -time.Second, remote: "[::1]:80", agent: "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0"},
	{path: "/caf\u00e9/\u2028\u2029/\u00a0/\u200b/\u0085", agent: "tab\there\nnewline\r\x00\x01\x1f\x7f"},
	{path: "/\xff\xfe/\xc3", agent: "\u3000ideographic space", remote: "\U0001F600", method: "\\", id: "="},
	{duration: 0, status: 499}, {duration: 999 * time.Nanosecond}, {duration: 1500 * time.Millisecond}, {duration: 26*time.Hour + 3*time.Minute + 5},
	{path: "<script>&amp;</script>", agent: "'single'", id: strings.Repeat("x", 2000)},
}

// accessLineTimes are the records' times: zones, millisecond edges.
func accessLineTimes() []time.Time {
	east := time.FixedZone("east", 5*3600+30*60)
	return []time.Time{
		time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 10, 30, 0, 999_999_999, east),
		time.Date(2026, 11, 29, 10, 30, 0, 1_000_000, time.FixedZone("west", -7*3600)),
		time.Date(1999, 12, 31, 23, 59, 59, 123_456_789, time.Local),
		time.Now(), // with a monotonic reading, as the access log's
	}
}

// slogAccessLine is what the handler of package slog that h stands for
// writes for f at end.
func slogAccessLine(t testing.TB, json bool, opts *slog.HandlerOptions, end time.Time, f *accessFields) string {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, opts)
	if json {
		h = slog.NewJSONHandler(&buf, opts)
	}
	if err := h.Handle(context.Background(), f.record(end)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// ownAccessLineOf is what NewAccessLogHandler's formatter writes for f at
// end, through writeAccess.
func ownAccessLineOf(t testing.TB, json bool, opts *slog.HandlerOptions, end time.Time, f *accessFields) string {
	var buf bytes.Buffer
	h := ownAccessLine(NewAccessLogHandler(&buf, opts, json))
	if h == nil {
		t.Fatal("NewAccessLogHandler's handler does not write its own access line")
	}
	if err := h.writeAccess(context.Background(), end, f); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestAccessLineAsSlog checks that the access log's own line is byte for
// byte what slog's text and JSON handlers write for the same record.
func TestAccessLineAsSlog(t *testing.T) {
	for _, json := range []bool{false, true} {
		for _, opts := range []*slog.HandlerOptions{nil, {Level: slog.LevelDebug}} {
			for _, end := range accessLineTimes() {
				for i := range accessLineCases {
					f := &accessLineCases[i]
					want := slogAccessLine(t, json, opts, end, f)
					if got := ownAccessLineOf(t, json, opts, end, f); got != want {
						t.Errorf("json %v, case %d at %v:\n got %q\nwant %q", json, i, end, got, want)
					}
				}
			}
		}
	}
}

// TestAccessLineTimesInSequence checks the access lines of one handler over
// times in sequence, as a server writes them: within a second, in another
// zone at the same second, the next second, back in time, across a change
// of a zone's offset, and years the short path does not take.
func TestAccessLineTimesInSequence(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("ny", -5*3600)
	}
	east := time.FixedZone("east", 5*3600+30*60)
	base := time.Date(2026, 11, 29, 10, 30, 7, 0, time.UTC)
	dst := time.Date(2026, 3, 8, 6, 59, 59, 999_000_000, time.UTC) // New York's spring change at 07:00 UTC
	times := []time.Time{
		base, base.Add(1), base.Add(5 * time.Millisecond), base.Add(999_999_999),
		base.In(east), base.Add(123 * time.Millisecond).In(east), base.Add(456 * time.Millisecond),
		base.Add(time.Second), base.Add(-time.Second + 10*time.Millisecond), base.Add(-24 * time.Hour),
		base.Local(), base.Add(7 * time.Millisecond).Local(),
		dst.In(ny), dst.Add(time.Millisecond).In(ny), dst.Add(2 * time.Millisecond).In(ny),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 500_000_000, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 600_000_000, time.UTC),
		time.Now(), time.Now(),
	}
	var buf bytes.Buffer
	h := ownAccessLine(NewAccessLogHandler(&buf, nil, false))
	f := &accessLineCases[0]
	for _, end := range times {
		buf.Reset()
		if err := h.writeAccess(context.Background(), end, f); err != nil {
			t.Fatal(err)
		}
		if got, want := buf.String(), slogAccessLine(t, false, nil, end, f); got != want {
			t.Errorf("at %v:\n got %q\nwant %q", end, got, want)
		}
	}
}

// FuzzAccessLine compares the access log's own line with slog's over any
// attribute values and times.
func FuzzAccessLine(f *testing.F) {
	for i, c := range accessLineCases {
		f.Add(c.id, c.method, c.path, c.status, c.bytes, int64(c.duration), c.remote, c.agent, int64(1795000000+i)*1e9+int64(i)*999_999, i%3*3600)
	}
	f.Fuzz(func(t *testing.T, id, method, path string, status int, n, duration int64, remote, agent string, unixNano int64, offset int) {
		end := time.Unix(0, unixNano).In(time.FixedZone("z", offset%(18*3600)))
		fs := &accessFields{id: id, method: method, path: path, status: status, bytes: n, duration: time.Duration(duration), remote: remote, agent: agent}
		for _, json := range []bool{false, true} {
			want := slogAccessLine(t, json, nil, end, fs)
			if got := ownAccessLineOf(t, json, nil, end, fs); got != want {
				t.Errorf("json %v:\n got %q\nwant %q", json, got, want)
			}
		}
	})
}

// TestAccessLogHandlerFallsBack checks that what NewAccessLogHandler's
// formatter cannot stand for goes through slog: options that change the
// line, and handlers derived from it.
func TestAccessLogHandlerFallsBack(t *testing.T) {
	var buf bytes.Buffer
	for _, opts := range []*slog.HandlerOptions{
		{AddSource: true},
		{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return a }},
	} {
		if ownAccessLine(NewAccessLogHandler(&buf, opts, false)) != nil {
			t.Errorf("options %+v: the access line is the handler's own", opts)
		}
	}
	h := NewAccessLogHandler(&buf, nil, true)
	for _, d := range []slog.Handler{h.WithAttrs([]slog.Attr{slog.String("a", "b")}), h.WithGroup("g"), slog.NewTextHandler(&buf, nil)} {
		if ownAccessLine(d) != nil {
			t.Errorf("%T: the access line is the handler's own", d)
		}
	}
	// The handler is slog's for everything else.
	slog.New(h).Info("hello", "k", "v w")
	if got, want := buf.String(), `"msg":"hello","k":"v w"}`+"\n"; !strings.HasSuffix(got, want) {
		t.Errorf("a record through the handler: %q, want it to end %q", got, want)
	}
}

// BenchmarkAccessLine is one access line into io.Discard, by slog's text
// handler from a record (as before NewAccessLogHandler) and by the access
// log's own formatter.
func BenchmarkAccessLine(b *testing.B) {
	f := &accessLineCases[0]
	f.agent = "wrk"
	b.Run("slog", func(b *testing.B) {
		h := slog.NewTextHandler(io.Discard, nil)
		b.ReportAllocs()
		for range b.N {
			_ = h.Handle(context.Background(), f.record(time.Now()))
		}
	})
	b.Run("own", func(b *testing.B) {
		h := ownAccessLine(NewAccessLogHandler(io.Discard, nil, false))
		b.ReportAllocs()
		for range b.N {
			_ = h.writeAccess(context.Background(), time.Now(), f)
		}
	})
}
