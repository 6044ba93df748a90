package http

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Server-Sent Events: GET /api/events streams the events the caller may
// read (docs/events.md). The rule of who may see which event is the rule
// layer's (Service.SessionEvent); this file only translates: the request's
// parameters, the stream's framing, its bounds.

// Defaults of EventStreamConfig.
const (
	DefaultEventHeartbeat    = 15 * time.Second
	DefaultEventBuffer       = 256
	DefaultEventMaxPerCaller = 64
	DefaultEventMaxPerAddr   = 256
	DefaultEventWriteTimeout = 10 * time.Second
	DefaultEventMaxReplay    = 10000
)

// EventStreamConfig configures GET /api/events (Config.EventStream).
type EventStreamConfig struct {
	// Events delivers the events published from now on (every instance's).
	Events resourceapi.Events
	// Log reads back the outbox for a client that resumes (Last-Event-ID).
	Log resourceapi.EventLog
	// Heartbeat is how often a comment line keeps idle proxies from closing
	// the stream; default DefaultEventHeartbeat.
	Heartbeat time.Duration
	// Buffer bounds the events waiting to be written on one connection;
	// past it the stream ends, and the client resumes with its
	// Last-Event-ID (nothing is lost while the outbox keeps the events).
	// Default DefaultEventBuffer.
	Buffer int
	// MaxPerCaller and MaxPerAddr bound the streams one user, and one
	// client address, hold open at once on this instance (429 past them;
	// negative: no cap). Defaults: GraphQL's, 64 and 256.
	MaxPerCaller, MaxPerAddr int
	// WriteTimeout bounds each write: a client that stops reading is
	// disconnected. Default DefaultEventWriteTimeout.
	WriteTimeout time.Duration
	// MaxReplay bounds the events one connection replays from the outbox;
	// past it the stream ends and the client resumes from there. Default
	// DefaultEventMaxReplay.
	MaxReplay int
}

// eventStreams is the state of GET /api/events: the configuration, the
// open streams per caller and address, and the shared rendering of recent
// events.
type eventStreams struct {
	cfg EventStreamConfig

	mu      sync.Mutex
	perUser map[int64]int
	perAddr map[string]int

	rendered renderCache
	arrivals arrivalCache
}

func newEventStreams(cfg EventStreamConfig) *eventStreams {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultEventHeartbeat
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultEventBuffer
	}
	if cfg.MaxPerCaller == 0 {
		cfg.MaxPerCaller = DefaultEventMaxPerCaller
	}
	if cfg.MaxPerAddr == 0 {
		cfg.MaxPerAddr = DefaultEventMaxPerAddr
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultEventWriteTimeout
	}
	if cfg.MaxReplay <= 0 {
		cfg.MaxReplay = DefaultEventMaxReplay
	}
	return &eventStreams{cfg: cfg, perUser: map[int64]int{}, perAddr: map[string]int{},
		rendered: renderCache{m: map[int64][]byte{}}, arrivals: arrivalCache{m: map[int64]*arrived{}}}
}

// acquire counts a stream of user from addr, or refuses it past a cap.
func (es *eventStreams) acquire(user int64, addr string) (release func(), err error) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.cfg.MaxPerCaller > 0 && es.perUser[user] >= es.cfg.MaxPerCaller {
		return nil, resourceapi.Errorf(resourceapi.CodeRateLimited, "Too many event streams open for this user (at most %d)", es.cfg.MaxPerCaller)
	}
	if es.cfg.MaxPerAddr > 0 && es.perAddr[addr] >= es.cfg.MaxPerAddr {
		return nil, resourceapi.Errorf(resourceapi.CodeRateLimited, "Too many event streams open from this address (at most %d)", es.cfg.MaxPerAddr)
	}
	es.perUser[user]++
	es.perAddr[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			es.mu.Lock()
			defer es.mu.Unlock()
			if es.perUser[user]--; es.perUser[user] == 0 {
				delete(es.perUser, user)
			}
			if es.perAddr[addr]--; es.perAddr[addr] == 0 {
				delete(es.perAddr, addr)
			}
		})
	}, nil
}

// arrived is an event as it reached this process's stream.
type arrived struct {
	ev resourceapi.Event
	at time.Time
}

// eventStream serves GET /api/events.
func (s *Server) eventStream() http.Handler {
	es := s.events
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		patterns, err := ParseEventTypes(q["types"])
		if err != nil {
			return err
		}
		filter, err := resourceapi.NewEventFilter(patterns)
		if err != nil {
			return err
		}
		last, resume, err := ParseLastEventID(r.Header.Values("Last-Event-ID"), q["last_event_id"])
		if err != nil {
			return err
		}
		cred, err := ParseCredential(r.Header["X-Api-Key"], r.Header["Authorization"])
		if err != nil {
			return err
		}
		addr := s.clientIP(r).String()
		cred.Client = addr
		// The stream's caller, kept current by the rule layer: a revoked
		// key, a deleted user, a password change ends the stream.
		sess, err := s.service.Session(r.Context(), cred)
		if err != nil {
			return err
		}
		release, err := es.acquire(sess.Caller().UserID, addr)
		if err != nil {
			return err
		}
		defer release()

		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		// Listen before replaying, so that nothing committed meanwhile
		// falls between the two; repeats are dropped by id.
		live := make(chan *arrived, es.cfg.Buffer) // pointers shared by every stream: 8 bytes a slot
		ended := make(chan struct{})
		err = es.cfg.Events.Listen(ctx, resourceapi.AllEvents, func(ev resourceapi.Event) bool {
			if !filter.Match(ev.Name) {
				return true
			}
			select {
			case live <- es.arrivals.get(ev):
				return true
			default:
				return false // the stream ends; the client resumes from the outbox
			}
		}, func() { close(ended) })
		if err != nil {
			return resourceapi.Errorf(resourceapi.CodeUnavailable, "The service is shutting down")
		}

		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout would end the stream
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h["Cache-Control"] = noStore
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		st := &sseWriter{w: w, rc: rc, timeout: es.cfg.WriteTimeout}
		if st.write([]byte("retry: 1000\n\n")) != nil {
			return nil
		}

		// deliver writes ev if the caller may see it; false ends the stream.
		deliver := func(ev resourceapi.Event, at time.Time) bool {
			shown, ok, err := s.service.SessionEvent(ctx, sess, at, ev)
			if err != nil {
				code := resourceapi.ErrorCode(err)
				if code == resourceapi.CodeInvalidToken || code == resourceapi.CodeUnauthenticated {
					_ = st.write(errorFrame(code, "The credential is no longer valid"))
				}
				return false
			}
			if !ok {
				return true
			}
			return st.write(es.frame(shown)) == nil
		}

		// through is the greatest event id the stream has passed: sent,
		// or not for this caller. Ids commit in order and the relays
		// publish them in order (docs/events.md), so every event after it
		// is still to come, live or from the outbox, and every event up to
		// it is behind: a live event at or below it is a repeat (of the
		// outbox's, or of a relay's that published again), dropped, as a
		// client that resumes after it would.
		var through int64
		if resume {
			purged, err := es.cfg.Log.PurgedThrough(ctx)
			if err != nil {
				return nil
			}
			if last < purged {
				if st.write(expiredFrame(last, purged)) != nil {
					return nil
				}
			}
			after, replayed := last, 0
			for {
				evs, err := es.cfg.Log.EventsAfter(ctx, after, 100)
				if err != nil {
					return nil
				}
				for _, ev := range evs {
					after = ev.ID
					if !filter.Match(ev.Name) {
						continue
					}
					if !deliver(ev, time.Now()) {
						return nil
					}
					replayed++
				}
				if len(evs) < 100 {
					break
				}
				if replayed >= es.cfg.MaxReplay {
					return nil // the client resumes after the last one
				}
			}
			through = after
		}
		// pass writes a live event, unless it is behind through.
		pass := func(a *arrived) bool {
			if a.ev.ID <= through {
				return true
			}
			through = a.ev.ID
			return deliver(a.ev, a.at)
		}

		heartbeat := time.NewTicker(es.cfg.Heartbeat)
		defer heartbeat.Stop()
		var expiry <-chan time.Time
		if exp := sess.Expires(); !exp.IsZero() {
			t := time.NewTimer(time.Until(exp))
			defer t.Stop()
			expiry = t.C
		}
		for {
			select {
			case a := <-live:
				if !pass(a) {
					return nil
				}
			case <-heartbeat.C:
				if st.write([]byte(": heartbeat\n\n")) != nil {
					return nil
				}
			case <-expiry:
				_ = st.write(errorFrame(resourceapi.CodeInvalidToken, "The credential has expired"))
				return nil
			case <-ended:
				// Dropped for falling behind, or the service is shutting
				// down: write what was taken, then end; the client resumes.
				for {
					select {
					case a := <-live:
						if !pass(a) {
							return nil
						}
					default:
						return nil
					}
				}
			case <-ctx.Done():
				return nil
			}
		}
	})
}

// sseWriter writes frames, each within the write timeout, and flushes them.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// eventData is the data of an event's frame.
type eventData struct {
	ID       int64           `json:"id"`
	Type     string          `json:"type"`
	Resource string          `json:"resource"`
	Actor    int64           `json:"actor"`
	At       string          `json:"at"`
	Record   json.RawMessage `json:"record"`
}

// frame returns ev's frame: "id", "event" (its type) and "data" (JSON, on
// one line). Every stream that may see ev shares one rendering.
func (es *eventStreams) frame(ev resourceapi.Event) []byte {
	if b := es.rendered.get(ev.ID); b != nil {
		return b
	}
	rec := json.RawMessage("null")
	if res := resourceapi.ResourceNamed(ev.Resource); res != nil && ev.Record != nil {
		if b, err := resourceapi.MarshalRecord(res, ev.Record); err == nil {
			rec = b
		}
	}
	data, _ := json.Marshal(eventData{ID: ev.ID, Type: ev.Name, Resource: ev.Resource, Actor: ev.Actor,
		At: ev.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Record: rec})
	b := make([]byte, 0, len(data)+len(ev.Name)+40)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, ev.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	es.rendered.put(ev.ID, b)
	return b
}

// expiredFrame tells a resuming client that events after last may be gone:
// the retention deleted events up to through. Its id is through, so that
// the client's next resumption does not hear it again.
func expiredFrame(last, through int64) []byte {
	data, _ := json.Marshal(map[string]any{"last_event_id": last, "purged_through": through,
		"message": "Events after your Last-Event-ID are older than the outbox's retention and may be gone; read the records again"})
	return []byte("id: " + strconv.FormatInt(through, 10) + "\nevent: expired\ndata: " + string(data) + "\n\n")
}

// errorFrame is the last frame of a stream that ends for code.
func errorFrame(code resourceapi.Code, msg string) []byte {
	data, _ := json.Marshal(map[string]string{"code": string(code), "message": msg})
	return []byte("event: error\ndata: " + string(data) + "\n\n")
}

// arrivalCache keeps the last renderCacheSize events as they arrived, so
// that every stream queues a pointer to one copy.
type arrivalCache struct {
	mu   sync.Mutex
	m    map[int64]*arrived
	ring [renderCacheSize]int64
	next int
}

// get returns ev as it arrived, the first stream's arrival time for all.
func (c *arrivalCache) get(ev resourceapi.Event) *arrived {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.m[ev.ID]; a != nil {
		return a
	}
	a := &arrived{ev: ev, at: time.Now()}
	delete(c.m, c.ring[c.next])
	c.ring[c.next] = ev.ID
	c.next = (c.next + 1) % len(c.ring)
	c.m[ev.ID] = a
	return a
}

// renderCache keeps the frames of the last renderCacheSize events, shared
// by the streams that send them.
type renderCache struct {
	mu   sync.Mutex
	m    map[int64][]byte
	ring [renderCacheSize]int64
	next int
}

const renderCacheSize = 1024

func (c *renderCache) get(id int64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *renderCache) put(id int64, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		return
	}
	delete(c.m, c.ring[c.next])
	c.ring[c.next] = id
	c.next = (c.next + 1) % len(c.ring)
	c.m[id] = b
}

// maxEventTypesBytes bounds the types parameter.
const maxEventTypesBytes = 4096

// ParseEventTypes reads the types parameter of GET /api/events: event
// patterns separated by commas, in one or several parameters
// (types=users.created,orders.*), spaces around each ignored. None at all
// is every event ("*"). The patterns themselves are the rule layer's to
// check (resourceapi.NewEventFilter).
func ParseEventTypes(values []string) ([]string, error) {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > maxEventTypesBytes {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "The types parameter is longer than %d bytes", maxEventTypesBytes)
	}
	var out []string
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if len(out) == resourceapi.MaxEventPatterns {
				return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "At most %d event types", resourceapi.MaxEventPatterns)
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return []string{resourceapi.AllEvents}, nil
	}
	return out, nil
}

// ParseLastEventID reads where a client resumes: the Last-Event-ID header
// (what EventSource sends when it reconnects), or else the last_event_id
// parameter (for a first connection that resumes, which EventSource cannot
// give a header). It is the decimal id of the last event the client
// received, 0 for "every event the outbox still keeps". resume is false
// when the client names none (an empty header is none, as EventSource
// sends after an event without an id).
func ParseLastEventID(header, param []string) (id int64, resume bool, err error) {
	values := header
	if len(values) == 0 {
		values = param
	}
	switch {
	case len(values) == 0:
		return 0, false, nil
	case len(values) > 1:
		return 0, false, resourceapi.Errorf(resourceapi.CodeBadRequest, "Send one Last-Event-ID")
	}
	v := strings.TrimSpace(values[0])
	if v == "" {
		return 0, false, nil
	}
	bad := resourceapi.Errorf(resourceapi.CodeBadRequest, "Last-Event-ID must be the decimal id of an event (from 0 to %d)", int64(1<<63-1))
	if len(v) > 19 || (len(v) > 1 && v[0] == '0') {
		return 0, false, bad
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false, bad
		}
	}
	id, err = strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, bad
	}
	return id, true, nil
}
