package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
)

// Stream defaults.
const (
	// DefaultStream is the key of the events stream when StreamOptions.Key
	// is empty.
	DefaultStream = "resourceapi:events"
	// DefaultStreamLength is about how many events the stream keeps when
	// StreamOptions.MaxLen is 0.
	DefaultStreamLength = 10000
	// DefaultStreamTimeout bounds each call to Redis (a publication, a
	// position check) when StreamOptions.Timeout is 0.
	DefaultStreamTimeout = 2 * time.Second
	// DefaultStreamBlock is how long one read waits for new entries when
	// StreamOptions.Block is 0.
	DefaultStreamBlock = time.Second
)

const (
	// readCount is how many entries one read returns at most.
	readCount = 100
	// maxReadBackoff bounds the wait between reads after failures: once
	// Redis answers again, events flow again within it.
	maxReadBackoff = 2 * time.Second
)

// StreamOptions configure NewStream. The zero value is the production
// default.
type StreamOptions struct {
	// Key is the stream's key; "" is DefaultStream. Instances that share
	// events share it; deployments that share a Redis must not (event ids
	// are unique within one database only).
	Key string
	// MaxLen caps the stream at about that many entries (XADD MAXLEN ~);
	// 0 is DefaultStreamLength. An instance that falls further behind than
	// that (cut off from Redis while the others publish) skips the oldest.
	MaxLen int64
	// Timeout bounds each call to Redis; 0 is DefaultStreamTimeout.
	Timeout time.Duration
	// Block is how long one read waits for entries; 0 is
	// DefaultStreamBlock. It also bounds how late a reset stream is noticed
	// (see Follow).
	Block time.Duration
	// Logger receives warnings while Redis cannot be read, at most one
	// every 10 seconds, and a line when it can again; nil discards them.
	Logger *slog.Logger
}

// Stream carries events between instances through a Redis stream: the
// relay of whichever instance publishes an event appends it (Publish), and
// every instance follows the stream into its own hub (Follow). A stream,
// not pub/sub: an instance that loses its connection for a moment reads, once
// reconnected, what was appended meanwhile.
type Stream struct {
	client  *goredis.Client
	key     string
	maxLen  int64
	timeout time.Duration
	block   time.Duration
	logger  *slog.Logger
}

var _ resourceapi.Publisher = (*Stream)(nil)

// NewStream returns the stream of opts.Key on client. The client must let
// contexts bound its calls (Open makes such clients).
func NewStream(client *goredis.Client, opts StreamOptions) *Stream {
	s := &Stream{client: client, key: opts.Key, maxLen: opts.MaxLen, timeout: opts.Timeout, block: opts.Block, logger: opts.Logger}
	if s.key == "" {
		s.key = DefaultStream
	}
	if s.maxLen <= 0 {
		s.maxLen = DefaultStreamLength
	}
	if s.timeout <= 0 {
		s.timeout = DefaultStreamTimeout
	}
	if s.block <= 0 {
		s.block = DefaultStreamBlock
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// Entry fields. The event's id travels in a field of its own: stream entry
// ids are Redis's, and start again after Redis loses the stream.
const (
	fieldID       = "id"
	fieldName     = "name"
	fieldAlias    = "alias"
	fieldActor    = "actor"
	fieldResource = "resource"
	fieldAt       = "at" // Unix milliseconds
	fieldRecord   = "record"
)

// Publish implements resourceapi.Publisher: it appends events to the
// stream, all or none (MULTI), trimming it to about MaxLen entries.
func (s *Stream) Publish(ctx context.Context, events []resourceapi.Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.client.TxPipeline()
	for _, ev := range events {
		record := []byte("null")
		if res := resourceapi.ResourceNamed(ev.Resource); res != nil && ev.Record != nil {
			var err error
			if record, err = resourceapi.MarshalRecord(res, ev.Record); err != nil {
				return fmt.Errorf("redis: publish event %d: %w", ev.ID, err)
			}
		}
		pipe.XAdd(ctx, &goredis.XAddArgs{
			Stream: s.key, MaxLen: s.maxLen, Approx: true,
			Values: []any{fieldID, ev.ID, fieldName, ev.Name, fieldAlias, ev.Alias, fieldActor, ev.Actor, fieldResource, ev.Resource, fieldAt, ev.At.UnixMilli(), fieldRecord, record},
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: publish %d events to %s: %w", len(events), s.key, err)
	}
	return nil
}

// decodeEntry reads an event from a stream entry.
func decodeEntry(msg goredis.XMessage) (resourceapi.Event, error) {
	str := func(name string) string { v, _ := msg.Values[name].(string); return v }
	var ev resourceapi.Event
	var err error
	if ev.ID, err = strconv.ParseInt(str(fieldID), 10, 64); err != nil || ev.ID <= 0 {
		return ev, fmt.Errorf("entry %s: no event id", msg.ID)
	}
	ms, err := strconv.ParseInt(str(fieldAt), 10, 64)
	if err != nil {
		return ev, fmt.Errorf("entry %s: no time", msg.ID)
	}
	ev.At = time.UnixMilli(ms).UTC()
	ev.Name, ev.Alias, ev.Resource = str(fieldName), str(fieldAlias), str(fieldResource)
	ev.Actor, _ = strconv.ParseInt(str(fieldActor), 10, 64) // absent in entries of earlier versions
	if ev.Name == "" {
		return ev, fmt.Errorf("entry %s: no event name", msg.ID)
	}
	// An event of a resource this version does not declare, or published
	// without its record, is delivered without it (see resourceapi.Event).
	if res := resourceapi.ResourceNamed(ev.Resource); res != nil && str(fieldRecord) != "null" {
		if ev.Record, err = resourceapi.UnmarshalRecord(res, []byte(str(fieldRecord))); err != nil {
			return ev, fmt.Errorf("entry %s: %w", msg.ID, err)
		}
	}
	return ev, nil
}

// Follower reads a Stream into a process's hub; see Stream.Follow.
type Follower struct {
	stream *Stream
	into   resourceapi.Publisher
	pacer  resourceapi.Pacer // into, when it paces its subscribers
	pos    string            // the id of the last entry delivered, or "0-0"
	page   []resourceapi.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	failing bool
	warned  time.Time
	resets  atomic.Int64
	read    atomic.Int64
}

// Follow starts following the stream from its current end: the events
// appended from now on are published into into (a process's hub), in the
// stream's order, a page of at most 100 at a time, from one goroutine, until
// Close. It fails when Redis does not answer now. When into is a
// resourceapi.Pacer, the follower reads the next page only once into is
// Ready: a burst waits in the stream while subscribers drain (so an instance
// whose subscribers lag further than MaxLen entries skips the oldest, as one
// cut off from Redis does).
//
// While Redis cannot be read, Follow retries, backing off up to 2 seconds,
// and resumes after the last entry it read: nothing appended meanwhile is
// missed, unless MaxLen trimmed it. After Redis restarts without its data,
// the stream starts again, empty, with new entry ids; they follow the old
// ones (entry ids are Redis's clock in milliseconds), so reading goes on as
// before. Should the new ids not follow (Redis's clock went back, or a
// replica with older data took over), the follower notices within one Block
// that the stream ends before its position, and reads the new stream from
// its start. Either way an event is delivered at most once by the hub,
// which drops an id it has seen.
func (s *Stream) Follow(ctx context.Context, into resourceapi.Publisher) (*Follower, error) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	last, err := s.lastID(cctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("redis: follow %s: %w", s.key, err)
	}
	ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	f := &Follower{stream: s, into: into, pos: last, cancel: cancel, done: make(chan struct{})}
	f.pacer, _ = into.(resourceapi.Pacer)
	go f.run(ctx)
	return f, nil
}

// lastID returns the id of the stream's last entry, or "0-0" when the
// stream has none (or does not exist).
func (s *Stream) lastID(ctx context.Context) (string, error) {
	msgs, err := s.client.XRevRangeN(ctx, s.key, "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// Close stops the follower and waits for it.
func (f *Follower) Close() {
	f.once.Do(f.cancel)
	<-f.done
}

// Resets returns how many times the follower found the stream reset and
// read it again from its start.
func (f *Follower) Resets() int64 { return f.resets.Load() }

// Read returns how many events the follower has published into its hub.
func (f *Follower) Read() int64 { return f.read.Load() }

func (f *Follower) run(ctx context.Context) {
	defer close(f.done)
	s := f.stream
	failures := 0
	for ctx.Err() == nil {
		err := f.readOnce(ctx)
		if err == nil {
			if f.failing {
				f.failing = false
				s.logger.Info("events: reading the Redis stream again", "stream", s.key)
			}
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		f.failing = true
		f.warn("events: cannot read the Redis stream; retrying", err)
		t := time.NewTimer(min(100*time.Millisecond<<min(failures-1, 5), maxReadBackoff))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// readOnce reads the entries after the position, waiting at most Block for
// some, and delivers them; when none came, it checks that the stream was not
// reset under the position.
func (f *Follower) readOnce(ctx context.Context) error {
	s := f.stream
	if f.pacer != nil {
		if err := f.pacer.Ready(ctx); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, s.block+s.timeout)
	defer cancel()
	streams, err := s.client.XRead(rctx, &goredis.XReadArgs{Streams: []string{s.key, f.pos}, Count: readCount, Block: s.block}).Result()
	if errors.Is(err, goredis.Nil) {
		return f.checkReset(ctx)
	}
	if err != nil {
		return err
	}
	page, last := f.page[:0], f.pos
	for _, st := range streams {
		for _, msg := range st.Messages {
			last = msg.ID
			ev, err := decodeEntry(msg)
			if err != nil {
				f.warn("events: skipped a malformed entry of the Redis stream", err) // never retried
				continue
			}
			page = append(page, ev)
		}
	}
	if len(page) > 0 {
		// Failing, the page is read again: the hub delivers each event once.
		if err := f.into.Publish(ctx, page); err != nil {
			return err
		}
	}
	f.pos = last
	f.read.Add(int64(len(page)))
	clear(page) // the records are not kept alive by it
	f.page = page[:0]
	return nil
}

// checkReset moves the position back to the start when the stream ends
// before it: the stream was lost and started again with ids that do not
// follow the old ones.
func (f *Follower) checkReset(ctx context.Context) error {
	s := f.stream
	if f.pos == "0-0" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	last, err := s.lastID(cctx)
	if err != nil {
		return err
	}
	if compareIDs(last, f.pos) < 0 {
		s.logger.Warn("events: the Redis stream was reset (Redis lost its data, or its clock went back); reading it from its start",
			"stream", s.key, "position", f.pos, "last", last)
		f.pos = "0-0"
		f.resets.Add(1)
	}
	return nil
}

// compareIDs orders two stream entry ids (<ms>-<seq>).
func compareIDs(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	if c := cmp.Compare(am, bm); c != 0 {
		return c
	}
	return cmp.Compare(as, bs)
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}

// warn logs msg unless a warning was logged less than warnEvery ago.
func (f *Follower) warn(msg string, err error) {
	now := time.Now()
	if !f.warned.IsZero() && now.Sub(f.warned) < warnEvery {
		return
	}
	f.warned = now
	f.stream.logger.Warn(msg, "stream", f.stream.key, "err", err)
}
