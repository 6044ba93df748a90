package main

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeRecorder keeps every Write it gets as one piece, so tests can see how
// the output was cut.
type writeRecorder struct {
	mu     sync.Mutex
	writes []string
	notify chan struct{} // if not nil, told of every write
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, string(p))
	w.mu.Unlock()
	if w.notify != nil {
		w.notify <- struct{}{}
	}
	return len(p), nil
}

func (w *writeRecorder) pieces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func TestLogWriterFlushesOnItsOwn(t *testing.T) {
	out := &writeRecorder{notify: make(chan struct{}, 1)}
	w := newLogWriter(out, 1024, time.Millisecond)
	w.Write([]byte("one\n"))
	<-out.notify // the flusher wrote it, without a Close
	if got := out.pieces(); len(got) != 1 || got[0] != "one\n" {
		t.Fatalf("written = %q, want [\"one\\n\"]", got)
	}
	w.Write([]byte("two\n"))
	go func() {
		for range out.notify {
		}
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	close(out.notify)
	if got := strings.Join(out.pieces(), ""); got != "one\ntwo\n" {
		t.Fatalf("written = %q, want %q", got, "one\ntwo\n")
	}
}

// TestLogWriterKeepsLinesWhole walks through every way a line can meet the
// buffer: it fits, it does not fit what is left, it is bigger than the whole
// buffer, and an unbuffered line comes while others wait. Each write to the
// destination must hold whole lines, and the lines must arrive in the order
// they were written.
func TestLogWriterKeepsLinesWhole(t *testing.T) {
	line := func(c byte, n int) string { return strings.Repeat(string(c), n-1) + "\n" }
	out := &writeRecorder{}
	w := newLogWriter(out, 64, time.Hour) // the flusher never runs
	var want []string
	buffered := func(s string) { w.Write([]byte(s)); want = append(want, s) }
	direct := func(s string) { w.Unbuffered().Write([]byte(s)); want = append(want, s) }

	buffered(line('a', 40))
	buffered(line('b', 40))  // does not fit after a: a goes out first
	direct(line('c', 10))    // b goes out first
	buffered(line('d', 100)) // bigger than the buffer: on its own
	buffered(line('e', 30))
	buffered(line('f', 34)) // fills the buffer exactly
	buffered(line('g', 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	direct(line('h', 5)) // after Close, lines still go out
	buffered(line('i', 5))

	pieces := out.pieces()
	for _, p := range pieces {
		if !strings.HasSuffix(p, "\n") || len(p) > 100 {
			t.Errorf("a write to the destination was %q: not whole lines", p)
		}
	}
	if got := strings.Join(pieces, ""); got != strings.Join(want, "") {
		t.Errorf("output = %q,\nwant     %q", got, strings.Join(want, ""))
	}
}

// TestLogWriterConcurrent logs from many goroutines at once, through slog as
// serve does: access-log records through the buffer, main-log records
// unbuffered, some bigger than the buffer, while the flusher runs. Every
// output line must be one complete record, each record must appear once,
// and each goroutine's records in the order it logged them.
func TestLogWriterConcurrent(t *testing.T) {
	const (
		bufSize    = 512
		goroutines = 8
		records    = 300
	)
	var out writeRecorder
	w := newLogWriter(&out, bufSize, 50*time.Microsecond)
	access := slog.New(slog.NewJSONHandler(w, nil))
	main := slog.New(slog.NewJSONHandler(w.Unbuffered(), nil))
	padding := func(g, n int) int { return (g*7919 + n*104729) % (bufSize * 3 / 2) }

	var wg sync.WaitGroup
	for g := range goroutines {
		log := access
		if g%3 == 0 {
			log = main
		}
		wg.Go(func() {
			for n := range records {
				log.Info("request", "g", g, "n", n, "pad", strings.Repeat("x", padding(g, n)))
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	next := make([]int, goroutines)
	lines := strings.Split(strings.TrimSuffix(strings.Join(out.pieces(), ""), "\n"), "\n")
	for _, line := range lines {
		var rec struct {
			Msg  string
			G, N int
			Pad  string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Msg != "request" {
			t.Fatalf("output line is not one whole record (%v): %.200q", err, line)
		}
		if rec.G < 0 || rec.G >= goroutines || rec.N != next[rec.G] || len(rec.Pad) != padding(rec.G, rec.N) {
			t.Fatalf("record g=%d n=%d with %d bytes of padding; want n=%d of that goroutine, with %d",
				rec.G, rec.N, len(rec.Pad), next[rec.G], padding(rec.G, rec.N))
		}
		next[rec.G]++
	}
	for g, n := range next {
		if n != records {
			t.Errorf("goroutine %d: %d records in the output, want %d", g, n, records)
		}
	}
}
