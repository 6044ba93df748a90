package main

import (
	"io"
	"sync"
	"time"
)

// Log output settings of serve.
const (
	// logBufferSize is how much access log is gathered into one write.
	logBufferSize = 64 << 10
	// flushInterval bounds how long a buffered log line waits to be written.
	flushInterval = 200 * time.Millisecond
)

// logWriter is the one way the server's logs reach their destination
// (stderr): the main logger and the access log both write through it, so
// that every line arrives whole and in order, whoever wrote it and however
// busy the server is.
//
// Its own Write buffers, for the access log: a write system call per request
// costs the server a third of its throughput. Lines reach the destination
// within the flush interval, at once when the buffer cannot take the next
// line, and when the writer is closed; a process killed with SIGKILL loses at
// most that interval of access log. Unbuffered returns the writer of the main
// logger, whose lines (errors, startup, shutdown) go out at once, after what
// is buffered, so that they stay in order with it.
//
// Each Write is taken to be one line (slog writes each record with one
// call), and a line is never split: the buffer is flushed before a line that
// does not fit, a line bigger than the whole buffer is written on its own,
// and no other line can be written in between, since every write holds the
// one mutex.
type logWriter struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte // capacity fixed at the buffer size
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// newLogWriter returns a logWriter to w with a buffer of size bytes, flushed
// every interval until Close.
func newLogWriter(w io.Writer, size int, interval time.Duration) *logWriter {
	l := &logWriter{w: w, buf: make([]byte, 0, size), stop: make(chan struct{}), done: make(chan struct{})}
	go l.flushEvery(interval)
	return l
}

// Write buffers the line p. After Close it writes it at once.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(p) > cap(l.buf)-len(l.buf) {
		if err := l.flushLocked(); err != nil {
			return 0, err
		}
	}
	if l.closed || len(p) > cap(l.buf) {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// Unbuffered returns a writer whose lines go out at once, after everything
// buffered before them.
func (l *logWriter) Unbuffered() io.Writer { return unbufferedLog{l} }

type unbufferedLog struct{ l *logWriter }

func (u unbufferedLog) Write(p []byte) (int, error) {
	u.l.mu.Lock()
	defer u.l.mu.Unlock()
	if err := u.l.flushLocked(); err != nil {
		return 0, err
	}
	return u.l.w.Write(p)
}

// flushLocked writes the buffer out in one write. The buffer is emptied even
// when that fails: a log that cannot be written must not hold every later
// line back with it.
func (l *logWriter) flushLocked() error {
	if len(l.buf) == 0 {
		return nil
	}
	n, err := l.w.Write(l.buf)
	if err == nil && n < len(l.buf) {
		err = io.ErrShortWrite
	}
	l.buf = l.buf[:0]
	return err
}

func (l *logWriter) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *logWriter) flushEvery(d time.Duration) {
	defer close(l.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.flush()
		case <-l.stop:
			return
		}
	}
}

// Close stops the flusher and writes what is buffered. Lines written after
// it go out at once.
func (l *logWriter) Close() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.flushLocked()
}
