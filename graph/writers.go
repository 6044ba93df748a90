package graph

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// writers runs the flushes of the subscription connections that have
// something to send, on a few goroutines that live while any connection
// waits: a goroutine of its own for each connection that an event reaches
// would cost a start, an exit and a scheduling each, which fan-out
// multiplies by every subscriber. None runs while nothing waits, so an idle
// server holds no writer.
//
// A flush can block: a client that does not read holds its writer until
// WebSocketOptions.WriteTimeout closes the connection. So that such clients
// never hold back the others, a watchdog runs while connections wait, and
// starts writers for those stuck in one flush for longer than stuckAfter:
// maxWriters are always free to take the next connection.
type writers struct {
	mu      sync.Mutex
	queue   []*wsConn // waiting for a writer, oldest first from head
	head    int
	running []*writer
	// watchdog is armed while connections wait.
	watchdog *time.Timer
	watching bool
	// epoch is the origin of writer.since, for a monotonic clock; set
	// by the first push.
	epoch time.Time
}

// writer is one goroutine of writers.
type writer struct {
	// since is when its flush in progress began (since epoch, in ns), or
	// 0 between flushes. Written by the writer, read by the watchdog.
	since atomic.Int64
}

const (
	// stuckAfter is how long one flush may take before its writer is no
	// longer counted as free: a flush of one message takes microseconds.
	stuckAfter = 20 * time.Millisecond
	// maxQueueKept bounds the queue's array kept between bursts.
	maxQueueKept = 1 << 14
)

// maxWriters is how many writers run while they make progress: the work
// is the write system call of each message, so a few per core.
func maxWriters() int { return 2 * runtime.GOMAXPROCS(0) }

// push queues c, which has something to send and no writer, and starts a
// writer unless enough run.
func (w *writers) push(c *wsConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epoch.IsZero() {
		w.epoch = time.Now()
	}
	w.queue = append(w.queue, c)
	if len(w.running) < maxWriters() && len(w.running) < len(w.queue)-w.head {
		w.start()
	}
	if !w.watching {
		w.watching = true
		if w.watchdog == nil {
			w.watchdog = time.AfterFunc(stuckAfter, w.watch)
		} else {
			w.watchdog.Reset(stuckAfter)
		}
	}
}

// start starts a writer; w.mu is held.
func (w *writers) start() {
	wr := &writer{}
	w.running = append(w.running, wr)
	go w.run(wr)
}

// run flushes waiting connections until none waits.
func (w *writers) run(wr *writer) {
	for {
		w.mu.Lock()
		if w.head == len(w.queue) {
			w.exit(wr)
			w.mu.Unlock()
			return
		}
		c := w.queue[w.head]
		w.queue[w.head] = nil
		w.head++
		w.mu.Unlock()
		wr.since.Store(int64(time.Since(w.epoch)) | 1) // never 0
		c.flush()
		wr.since.Store(0)
	}
}

// exit forgets wr, whose goroutine returns, and empties the queue; w.mu is
// held.
func (w *writers) exit(wr *writer) {
	for i, r := range w.running {
		if r == wr {
			last := len(w.running) - 1
			w.running[i], w.running[last] = w.running[last], nil
			w.running = w.running[:last]
			break
		}
	}
	w.queue, w.head = w.queue[:0], 0
	if cap(w.queue) > maxQueueKept {
		w.queue = nil
	}
}

// watch is the watchdog: while connections wait, it keeps maxWriters
// writers that are not stuck in one flush.
func (w *writers) watch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == len(w.queue) {
		w.watching = false
		return
	}
	now := int64(time.Since(w.epoch))
	free := 0
	for _, r := range w.running {
		if s := r.since.Load(); s == 0 || now-s < int64(stuckAfter) {
			free++
		}
	}
	for ; free < maxWriters() && free < len(w.queue)-w.head; free++ {
		w.start()
	}
	w.watchdog.Reset(stuckAfter)
}
