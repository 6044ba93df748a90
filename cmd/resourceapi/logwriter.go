package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// flushInterval bounds how long a buffered log line waits to be written.
const flushInterval = 200 * time.Millisecond

// bufferedWriter batches log lines into few writes: the access log writes a
// line per request, and a write system call per request costs the server a
// third of its throughput. Lines reach w within flushInterval, and at once
// when the buffer fills or the writer is closed; a process killed with
// SIGKILL loses at most that interval of access log.
type bufferedWriter struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newBufferedWriter(w io.Writer) *bufferedWriter {
	b := &bufferedWriter{buf: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushEvery(flushInterval)
	return b
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *bufferedWriter) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Flush()
}

func (b *bufferedWriter) flushEvery(d time.Duration) {
	defer close(b.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			return
		}
	}
}

// Close stops the flusher and writes what is buffered.
func (b *bufferedWriter) Close() error {
	close(b.stop)
	<-b.done
	return b.flush()
}
