package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/resourceapi/resourceapi"
)

// Subscriptions are served over WebSocket by wsTransport, the project's own
// gqlgen transport, which speaks both subprotocols: graphql-transport-ws
// (the graphql-ws library's, offered first) and the legacy graphql-ws of
// subscriptions-transport-ws (also chosen when a client names none).
//
// It is built for many idle subscribers: a connection costs one goroutine,
// its reader, and a subscription none. An event reaches a subscription
// through the hub's callback (resourceapi.Events.Listen), which queues it on
// the connection (one small entry pointing at the event's value, which every
// subscription shares), and the handler's writers (writers.go), goroutines
// that run only while connections have events to send, turn them into
// messages. Timers, not goroutines, carry the init timeout, the keep-alive
// pings, the write deadline and the end of a bearer token.
//
// Nothing counts events against a subscriber: one that keeps reading
// receives every event, whatever the burst. Memory is bounded otherwise
// (see pace.go): the sources of events wait for the connections that are
// being written to drain before they hand over more, a connection whose
// write makes no progress for WriteTimeout is closed, and
// WebSocketOptions.MaxQueueBytes is the last guard of one connection.
//
// Before events are sent on a connection, the rule layer confirms that its
// caller may still receive them (resourceapi.Service.Confirm): a revoked
// credential closes the connection with 4403, a withdrawn permission ends
// the subscriptions it covered with an error.

// WebSocket close codes.
const (
	closeBadMessage   = 4400 // a message that is not of the protocol
	closeUnauthorized = 4401 // subscribe before connection_ack
	closeForbidden    = 4403 // no valid credential in connection_init or on the upgrade
	closeInitTimeout  = 4408 // no connection_init within WebSocketOptions.InitTimeout
	closeDuplicateID  = 4409 // subscribe with the id of an active subscription
	closeTooManyInits = 4429 // a second connection_init
	closeTooMany      = 4429 // more connections of one caller than WebSocketOptions.MaxPerCaller
	closeTooSlow      = 1008 // policy violation: more queued than MaxQueueBytes
	closeInternal     = 1011 // the caller could not be confirmed (the store failed)
)

const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
)

// wsTransport is the gqlgen transport of subscription connections: a GET
// that asks for a WebSocket upgrade.
type wsTransport struct{ h *Handler }

var _ graphql.Transport = wsTransport{}

func (wsTransport) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet && isUpgrade(r)
}

// Do accepts the connection, with origins checked (the server's own and
// Options.Origins) and no compression, and serves it from a goroutine of its
// own: the request's goroutine returns, and with it the deep stack of the
// middleware it ran through. The connection's context keeps the request's
// values (the caller of a credential on the upgrade) but not its
// cancellation, which ends when the handler returns; Shutdown ends it.
func (t wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	h := t.h
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConn{h: h, exec: exec, ctx: ctx, cancel: cancel, subs: make(map[string]*wsSub)}
	if h.cfg.ClientIP != nil {
		c.client = h.cfg.ClientIP(r)
	} else if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		c.client = host
	}
	// The credential of the upgrade request, which package http verified
	// already: kept to confirm the connection's caller later.
	if h.cfg.ParseCredential != nil {
		c.upgradeCred, c.upgradeErr = h.cfg.ParseCredential(r.Header.Values("X-Api-Key"), r.Header.Values("Authorization"))
		c.upgradeCred.Client = c.client
	}
	switch h.conns.add(c, h.cfg.WebSocket.MaxPerAddr) {
	case addShuttingDown:
		cancel()
		writeRequestError(w, http.StatusServiceUnavailable, mediaJSON, "UNAVAILABLE", "The server is shutting down")
		return
	case addTooMany:
		cancel()
		w.Header().Set("Retry-After", "1")
		writeRequestError(w, http.StatusTooManyRequests, mediaJSON, "RATE_LIMITED",
			"Too many subscription connections from this address; close one first")
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:    []string{protoTransportWS, protoLegacyWS},
		OriginPatterns:  h.cfg.Origins,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil { // Accept has answered (403 for another origin, 426, ...)
		h.conns.remove(c)
		cancel()
		return
	}
	ws := h.cfg.WebSocket
	conn.SetReadLimit(ws.MaxMessageBytes)
	c.conn = conn
	c.legacy = conn.Subprotocol() != protoTransportWS
	c.mu.Lock()
	c.initTimer = time.AfterFunc(ws.InitTimeout, func() {
		c.mu.Lock()
		inited := c.inited
		c.mu.Unlock()
		if !inited {
			c.closeWith(closeInitTimeout, "Connection initialisation timeout")
		}
	})
	c.pingTimer = time.AfterFunc(ws.PingInterval, c.ping)
	c.mu.Unlock()
	context.AfterFunc(ctx, func() { c.closeWith(websocket.StatusNormalClosure, "terminated") })
	go c.run()
}

// wsConn is the server's state of one subscription connection.
type wsConn struct {
	h      *Handler
	exec   graphql.GraphExecutor
	conn   *websocket.Conn
	legacy bool   // the graphql-ws subprotocol, not graphql-transport-ws
	client string // the client address, for password throttling and the cap per address
	// upgradeCred is the credential of the upgrade request (SchemeNone
	// without one), upgradeErr why it could not be read.
	upgradeCred resourceapi.Credential
	upgradeErr  error
	// ctx is the connection's: canceled when it ends (or by Shutdown),
	// which ends its subscriptions.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	inited bool
	// opCtx is the context of the connection's operations once
	// connection_init is accepted: ctx with the caller; caller is the
	// caller's callerKey.
	opCtx   context.Context
	caller  string
	session *resourceapi.Session // the caller, as the rule layer confirms it
	user    int64                // the caller's user, counted against MaxPerCaller; 0 when not counted
	subs    map[string]*wsSub    // active operations by id
	counted int                  // subscriptions counted against the cap
	queue   []wsPending          // one entry per event waiting to be sent
	spare   []wsPending          // the array of the queue sent last, for the next
	writing bool                 // with the writers, or being flushed
	closed  bool
	// pending counts the entries queued or being sent, and pendingBytes
	// what they hold (see pace.go).
	pending      int
	pendingBytes int64
	over         bool // counted in Handler.pace as over paceHigh
	initTimer    *time.Timer
	pingTimer    *time.Timer
	expiryTimer  *time.Timer // closes the connection when its bearer token expires

	// writeSince is when the write in progress began (ns since the
	// writers' epoch, | 1), or 0 between writes: a connection whose write
	// makes no progress is not waited for (see pace.go).
	writeSince atomic.Int64

	// wmu serializes the connection's writes, so that one timer, armed
	// for each write, bounds the write in progress.
	wmu    sync.Mutex
	wtimer *time.Timer // guarded by wmu
}

// wsSub is one operation of a connection.
type wsSub struct {
	c      *wsConn
	id     string
	ctx    context.Context // canceled when the operation ends
	cancel context.CancelFunc
	// responses is gqlgen's handler of the operation; for a subscription
	// each call turns the value last fed (feed) into a response. rctx is
	// the context it runs in: the operation's, with the caller the
	// connection has now (refreshCaller).
	responses graphql.ResponseHandler
	rctx      context.Context
	// doc identifies the operation (document, operation name and
	// variables) for sharing renderings (see renders).
	doc string
	// res is the resource whose records the subscription reports, which
	// its caller must still be allowed to read (Service.Confirm); unless
	// each, when only the caller's credential is confirmed, and each event
	// goes to them if they may read its record (subscribeEach).
	res  *resourceapi.Resource
	each bool
	// feed hands the value of an event to the operation's stream, which
	// responses reads next; end closes the stream. Both run on the writer
	// that sends the subscription's events.
	feed func(any)
	end  func()
	// Guarded by c.mu: listening is set by the resolver once it has
	// registered with the hub; armed once responses is in place, and early
	// holds the events that arrived before.
	listening bool
	armed     bool
	early     []*sharedEvent
}

// wsPending is an event of a subscription waiting to be sent, or nil for
// the end of the stream: two words, whatever the event.
type wsPending struct {
	s  *wsSub
	ev *sharedEvent
}

type wsSubKey struct{}

// wsSubFrom returns the subscription whose resolver runs in ctx: nil outside
// a WebSocket operation.
func wsSubFrom(ctx context.Context) *wsSub {
	s, _ := ctx.Value(wsSubKey{}).(*wsSub)
	return s
}

// wsMessage is a message of either protocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// run reads the client's messages until the connection ends, then releases
// what the connection holds. A connection the server closes ends when its
// closing handshake does (or, with a client that does not answer, after
// coder/websocket's 5 s), so the reader reads on until then.
func (c *wsConn) run() {
	defer func() {
		c.cancel()
		c.stop()
		c.h.conns.remove(c)
		c.mu.Lock()
		c.closed = true
		if c.over {
			c.over = false
			c.h.pace.remove(c)
		}
		c.mu.Unlock()
		c.conn.CloseNow()
	}()
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			c.closeWith(closeBadMessage, "Binary messages are not supported")
			continue
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
			c.invalid("Invalid message received")
			continue
		}
		c.handle(m)
	}
}

// handle acts on one message of the client.
func (c *wsConn) handle(m wsMessage) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return // closing: what the client still sends is moot
	}
	switch m.Type {
	case "connection_init":
		c.init(m.Payload)
		return
	case "ping":
		if !c.legacy {
			c.write(wsMessage{Type: "pong", Payload: m.Payload})
			return
		}
	case "pong":
		if !c.legacy {
			return
		}
	case "subscribe", "start":
		if (m.Type == "start") == c.legacy {
			c.start(m)
			return
		}
	case "complete", "stop":
		if (m.Type == "stop") == c.legacy {
			c.stopOperation(m.ID)
			return
		}
	case "connection_terminate":
		if c.legacy {
			c.closeWith(websocket.StatusNormalClosure, "terminated")
			return
		}
	}
	c.invalid(fmt.Sprintf("Unexpected message of type %q", m.Type))
}

// invalid answers a message that is not of the protocol: graphql-transport-ws
// closes with 4400; graphql-ws, which has no such code, sends
// connection_error.
func (c *wsConn) invalid(reason string) {
	if c.legacy {
		c.writeErrors("connection_error", "", &gqlerror.Error{Message: reason})
		return
	}
	c.closeWith(closeBadMessage, reason)
}

// init accepts connection_init: it authenticates the payload's credential
// ({"Authorization": "Bearer ..."}, {"X-API-Key": "..."} or Basic; names in
// any case), or else the upgrade request's. Without a valid one the
// connection is closed with 4403; past the caller's cap of connections
// (WebSocketOptions.MaxPerCaller), with 4429.
func (c *wsConn) init(payload json.RawMessage) {
	c.mu.Lock()
	inited := c.inited
	c.mu.Unlock()
	if inited {
		if !c.legacy {
			c.closeWith(closeTooManyInits, "Too many initialisation requests")
		}
		return
	}
	var fields map[string]any
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &fields); err != nil {
			c.closeWith(closeBadMessage, "The connection_init payload must be an object")
			return
		}
	}
	ctx, sess, refused := c.h.authenticateInit(c.ctx, fields, c)
	if refused != "" {
		c.closeWith(closeForbidden, refused)
		return
	}
	who := resourceapi.CallerFrom(ctx)
	if !c.h.conns.addCaller(c, who.UserID, c.h.cfg.WebSocket.MaxPerCaller) {
		c.closeWith(closeTooMany, "Too many subscription connections for this caller; close one first")
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.inited, c.opCtx, c.caller, c.session = true, ctx, callerKey(who), sess
	if c.initTimer != nil {
		c.initTimer.Stop()
		c.initTimer = nil // its memory goes to the write deadline's timer
	}
	if sess != nil && !sess.Expires().IsZero() {
		// A bearer token ends the connection when it expires, whether or
		// not an event comes.
		c.expiryTimer = time.AfterFunc(time.Until(sess.Expires()), func() {
			c.closeWith(closeForbidden, "Forbidden: the credential has expired")
		})
	}
	c.mu.Unlock()
	c.write(wsMessage{Type: "connection_ack"})
	if c.legacy {
		c.write(wsMessage{Type: "ka"})
	}
}

// authenticateInit returns ctx with the caller of a connection_init
// payload's credential, or of the upgrade request's when the payload has
// none, and the session the rule layer confirms that caller by before each
// delivery; or else why the connection is refused, the reason of its close.
func (h *Handler) authenticateInit(ctx context.Context, payload map[string]any, c *wsConn) (_ context.Context, _ *resourceapi.Session, refused string) {
	var apiKey, authorization []string
	for k, v := range payload {
		s, ok := v.(string)
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "x-api-key":
			apiKey = append(apiKey, s)
		case "authorization":
			authorization = append(authorization, s)
		}
	}
	const invalid = "Forbidden: the credential is not valid"
	var cred resourceapi.Credential
	if len(apiKey)+len(authorization) > 0 {
		if h.cfg.ParseCredential == nil {
			return nil, nil, invalid
		}
		var err error
		if cred, err = h.cfg.ParseCredential(apiKey, authorization); err != nil {
			return nil, nil, invalid
		}
		cred.Client = c.client
	} else {
		switch {
		case resourceapi.CredentialErrorFrom(ctx) != nil || c.upgradeErr != nil:
			return nil, nil, invalid
		case resourceapi.CallerFrom(ctx) == nil:
			return nil, nil, "Forbidden: a credential is required"
		case h.cfg.ParseCredential == nil:
			return ctx, nil, "" // verified by package http; nothing to confirm it by
		}
		cred = c.upgradeCred
	}
	sess, err := h.cfg.Service.Session(ctx, cred)
	if err != nil {
		return nil, nil, invalid
	}
	return resourceapi.WithCaller(resourceapi.WithCredentialError(ctx, nil), sess.Caller()), sess, ""
}

// start begins the subscription of a subscribe (start) message: its
// resolver registers with the event hub through the operation's context.
// Queries and mutations are refused: they go over HTTP, where the rate
// limit counts them.
func (c *wsConn) start(m wsMessage) {
	c.mu.Lock()
	inited, opCtx := c.inited, c.opCtx
	_, dup := c.subs[m.ID]
	c.mu.Unlock()
	switch {
	case !inited:
		if c.legacy {
			c.writeErrors("error", m.ID, &gqlerror.Error{Message: "Unauthorized: send connection_init first"})
		} else {
			c.closeWith(closeUnauthorized, "Unauthorized")
		}
		return
	case m.ID == "":
		c.invalid("A subscribe message needs an id")
		return
	case dup:
		if c.legacy {
			c.writeErrors("error", m.ID, &gqlerror.Error{Message: "Subscriber for " + m.ID + " already exists"})
		} else {
			c.closeWith(closeDuplicateID, "Subscriber for "+m.ID+" already exists")
		}
		return
	}

	ctx := graphql.StartOperationTrace(opCtx)
	start := graphql.Now()
	params := &graphql.RawParams{}
	if err := json.Unmarshal(m.Payload, params); err != nil {
		c.writeErrors("error", m.ID, &gqlerror.Error{Message: "The payload is not a GraphQL request"})
		return
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		// A request that fails before it executes (it does not parse or
		// validate, or costs more than the limits allow) is answered, in
		// both protocols, with an error message carrying the GraphQL
		// errors, which ends the operation: no next, no complete.
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		c.writeErrors("error", m.ID, resp.Errors...)
		return
	}

	if rc.Operation.Operation != ast.Subscription {
		// Over HTTP, each query and mutation passes the rate limit; over
		// a socket nothing would count them.
		c.writeErrors("error", m.ID, &gqlerror.Error{
			Message:    "Only subscriptions are served over the WebSocket; send queries and mutations to POST /graphql",
			Extensions: map[string]any{"code": codeBadRequest}})
		return
	}
	s := &wsSub{c: c, id: m.ID, doc: operationKey(params)}
	s.ctx, s.cancel = context.WithCancel(graphql.WithOperationContext(ctx, rc))
	c.mu.Lock()
	c.subs[m.ID] = s
	c.mu.Unlock()
	// The resolver runs here and registers with the hub (s.listening); one
	// that fails leaves a one-shot handler of its errors. Events that arrive
	// before the handler is in place wait for it (s.early).
	var responses graphql.ResponseHandler
	var rctx context.Context
	func() {
		defer c.recover(s)
		responses, rctx = c.exec.DispatchOperation(context.WithValue(s.ctx, wsSubKey{}, s), rc)
	}()
	if responses == nil {
		return // it panicked, and is over
	}
	c.mu.Lock()
	s.responses, s.rctx = responses, rctx
	s.armed = true
	early, listening := s.early, s.listening
	s.early = nil
	c.mu.Unlock()
	if !listening {
		if resp := responses(rctx); resp != nil {
			c.writeResponse(s.id, resp)
		}
		c.finish(s)
		return
	}
	for _, ev := range early {
		s.ready(ev)
	}
}

// operationKey identifies what an operation renders: its document,
// operation name and variables (as canonical JSON).
func operationKey(p *graphql.RawParams) string {
	vars, _ := json.Marshal(p.Variables) // decoded from JSON, so it encodes
	return p.Query + "\x00" + p.OperationName + "\x00" + string(vars)
}

// recover turns a panic of an operation into its error, and ends it.
func (c *wsConn) recover(s *wsSub) {
	if p := recover(); p != nil {
		c.h.logger.Error("graphql: panic in a subscription", "panic", fmt.Sprint(p))
		c.writeErrors("error", s.id, &gqlerror.Error{Message: "Internal server error",
			Extensions: map[string]any{"code": codeInternal}})
		c.remove(s)
		s.cancel()
	}
}

// stopOperation ends the client's operation id (complete, stop).
func (c *wsConn) stopOperation(id string) {
	c.mu.Lock()
	s := c.subs[id]
	c.mu.Unlock()
	if s == nil {
		return
	}
	c.remove(s)
	s.cancel()
	if c.legacy {
		c.complete(id)
	}
}

// remove forgets s; it reports whether s was still active.
func (c *wsConn) remove(s *wsSub) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs[s.id] != s {
		return false
	}
	delete(c.subs, s.id)
	return true
}

// finish ends s from the server's side: complete, unless the client ended
// it first.
func (c *wsConn) finish(s *wsSub) {
	if c.remove(s) {
		c.complete(s.id)
	}
	s.cancel()
}

// ready queues ev, an event of s (nil: the end of its stream), to be sent,
// and hands the connection to the writers unless they have it. It is called
// from the hub's delivery, so it never blocks; it reports false only when
// it closes the connection because it would hold more than MaxQueueBytes
// (see pace.go).
func (s *wsSub) ready(ev *sharedEvent) bool {
	c := s.c
	c.mu.Lock()
	if c.closed {
		// Closing: its end removes the subscription from the hub.
		c.mu.Unlock()
		return true
	}
	if !s.armed {
		s.early = append(s.early, ev)
		c.mu.Unlock()
		return true
	}
	c.queue = append(c.queue, wsPending{s, ev})
	c.pending++
	if ev != nil {
		c.pendingBytes += ev.size + pendingEntryBytes
	}
	if c.pendingBytes > c.h.cfg.WebSocket.MaxQueueBytes {
		c.mu.Unlock()
		c.closeWith(closeTooSlow, "Too many events waiting for this connection; reconnect")
		return false
	}
	if c.pending >= paceHigh && !c.over {
		c.over = true
		c.h.pace.add(c)
	}
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		c.h.writers.push(c)
	}
	return true
}

// flush sends what is queued, and returns when nothing is. The queue's
// array and the one sent before take turns, so that queueing an event
// allocates nothing. Before a batch is sent, the rule layer confirms that
// the connection's caller may still receive it (confirm).
func (c *wsConn) flush() {
	var sent []wsPending
	for {
		c.mu.Lock()
		if sent != nil {
			c.sent(sent)
		}
		c.recycle(sent)
		queue := c.queue
		c.queue, c.spare = c.spare, nil
		if len(queue) == 0 || c.closed {
			c.writing = false
			if c.closed {
				c.sent(queue)
			}
			c.recycle(queue)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if c.confirm(queue) {
			for _, p := range queue {
				c.next(p.s, p.ev)
			}
		}
		sent = queue
	}
}

// sent forgets the entries of queue in the connection's counts; c.mu is
// held.
func (c *wsConn) sent(queue []wsPending) {
	c.pending -= len(queue)
	for _, p := range queue {
		if p.ev != nil {
			c.pendingBytes -= p.ev.size + pendingEntryBytes
		}
	}
	if c.over && c.pending < paceHigh {
		c.over = false
		c.h.pace.remove(c)
	}
}

// confirm asks the rule layer whether the connection's caller may still
// receive the events of queue, as of when the last of them arrived: a
// change that reached the store before an event reached this instance
// applies to it. A credential that is no longer valid (revoked, expired,
// its user deleted) closes the connection with 4403; a subscription whose
// resource the caller may no longer read ends with an error; a store that
// cannot tell closes the connection with 1011, for the client to reconnect.
// It reports whether the connection is still open.
func (c *wsConn) confirm(queue []wsPending) bool {
	sess := c.session
	if sess == nil {
		return true // no session: the caller came without a credential parser
	}
	var since time.Time
	for i := len(queue) - 1; i >= 0; i-- {
		if ev := queue[i].ev; ev != nil {
			since = ev.at
			break
		}
	}
	if since.IsZero() {
		return true // only ends of streams
	}
	var checked [4]*resourceapi.Resource // the resources of the batch, usually one or two
	n := 0
	credential := false // confirmed for the subscriptions of each event
	for _, p := range queue {
		res := p.s.res
		if res == nil || p.s.ctx.Err() != nil {
			continue
		}
		var err error
		if p.s.each {
			if credential {
				continue
			}
			credential = true
			err = c.h.cfg.Service.ConfirmSession(c.ctx, sess, since)
		} else {
			if slices.Contains(checked[:n], res) {
				continue
			}
			if n < len(checked) {
				checked[n] = res
				n++
			}
			err = c.h.cfg.Service.Confirm(c.ctx, sess, since, res)
		}
		switch resourceapi.ErrorCode(err) {
		case "":
			continue
		case resourceapi.CodeForbidden:
			// The caller is refreshed first: a subscribe that follows the
			// error is decided as the caller is now.
			c.refreshCaller(sess)
			c.endSubscriptions(res, err)
			continue
		case resourceapi.CodeInvalidToken, resourceapi.CodeUnauthenticated:
			c.closeWith(closeForbidden, "Forbidden: the credential is no longer valid")
		default:
			c.h.logger.Error("graphql: confirming a subscriber's caller", "err", err)
			c.closeWith(closeInternal, "The server could not confirm the credential; reconnect")
		}
		return false
	}
	c.refreshCaller(sess)
	return true
}

// refreshCaller makes the connection's operations run as the caller the
// session now has, when re-authentication changed it (roles, permissions):
// nested fields are resolved, and renderings shared, as that caller.
func (c *wsConn) refreshCaller(sess *resourceapi.Session) {
	cur := sess.Caller()
	c.mu.Lock()
	defer c.mu.Unlock()
	if resourceapi.CallerFrom(c.opCtx) == cur {
		return
	}
	c.opCtx = resourceapi.WithCaller(c.opCtx, cur)
	c.caller = callerKey(cur)
	for _, s := range c.subs {
		if s.armed {
			s.rctx = resourceapi.WithCaller(s.rctx, cur)
		}
	}
}

// endSubscriptions ends the connection's subscriptions of res with err,
// which the caller may no longer read: an error message for each (in both
// protocols), and nothing more for that id.
func (c *wsConn) endSubscriptions(res *resourceapi.Resource, err error) {
	c.mu.Lock()
	var ended []*wsSub
	for _, s := range c.subs {
		if s.res == res {
			ended = append(ended, s)
		}
	}
	c.mu.Unlock()
	for _, s := range ended {
		if c.remove(s) {
			s.cancel()
			c.writeErrors("error", s.id, c.h.presenter(c.ctx, err))
		}
	}
}

// maxSpare bounds the array a connection keeps for its queue: one that a
// burst grew further is left to the collector.
const maxSpare = 16

// recycle keeps the array of a queue that was sent, emptied, as the next
// queue's; c.mu is held.
func (c *wsConn) recycle(sent []wsPending) {
	if sent == nil || cap(sent) > maxSpare {
		return
	}
	clear(sent) // the subscriptions are not kept alive by it
	c.spare = sent[:0]
}

// next sends ev, the next event of s, or completes s when its stream ended
// (ev nil). The rendering of an event is shared with the connection's and
// other connections' subscriptions that render it identically (see
// renders): only the one that renders it hands its value to its stream.
func (c *wsConn) next(s *wsSub, ev *sharedEvent) {
	if s.ctx.Err() != nil {
		return
	}
	defer c.recover(s)
	if ev == nil {
		s.end()
		if resp := s.responses(s.rctx); resp != nil {
			c.writeResponse(s.id, resp) // not expected of a closed stream
		}
		c.finish(s)
		return
	}
	if s.each {
		if _, ok := c.h.cfg.Service.EventFor(resourceapi.CallerFrom(s.rctx), ev.event); !ok {
			// Not this caller's to see, as they are now (an order of
			// another user): the rule layer decides per event.
			return
		}
	}
	if c.caller != "" {
		k := renderKey{event: ev.id, doc: s.doc, caller: c.caller}
		r := c.h.renders.get(k)
		mine := false
		r.once.Do(func() {
			mine = true
			s.feed(ev.value)
			if resp := s.responses(s.rctx); resp != nil {
				var err error
				r.payload, err = json.Marshal(resp)
				r.ok = err == nil
			}
		})
		if mine && r.ok {
			c.h.renders.sized(k, r)
		}
		if r.ok {
			c.writeMessage(s.id, r.payload)
			return
		}
		if mine {
			c.finish(s) // the rendering failed
			return
		}
	}
	s.feed(ev.value)
	resp := s.responses(s.rctx)
	if resp == nil {
		c.finish(s)
		return
	}
	c.writeResponse(s.id, resp)
}

// renders shares the rendering of an event among subscriptions: the
// subscriptions of the same operation (document, operation name and
// variables) by the same caller (user, name, roles and permissions:
// everything the rule layer decides by) receive the same bytes, so an event
// that reaches many of them (one service account's subscribers, one user's
// tabs) is rendered once. The first to get there renders it; the others
// wait for it. It keeps the last maxRenders renderings, and at most
// maxRenderBytes of them: a rendering dropped while others still need it is
// rendered again by the next, never lost.
type renders struct {
	mu    sync.Mutex
	m     map[renderKey]*rendering
	order []renderKey // insertion order, a ring of maxRenders
	next  int         // the oldest slot of order, the next to reuse
	bytes int64       // the sizes of the renderings in m
}

const (
	maxRenders     = 4096
	maxRenderBytes = 16 << 20
)

type renderKey struct {
	event       int64
	doc, caller string
}

type rendering struct {
	once    sync.Once
	payload []byte
	ok      bool
	size    int64 // guarded by renders.mu, set by sized
}

func (rs *renders) get(k renderKey) *rendering {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.m[k]; ok {
		return r
	}
	if rs.m == nil {
		rs.m = make(map[renderKey]*rendering)
		rs.order = make([]renderKey, maxRenders)
	}
	rs.drop(rs.next)
	r := &rendering{}
	rs.m[k], rs.order[rs.next] = r, k
	rs.next = (rs.next + 1) % maxRenders
	return r
}

// sized records the size of r, rendered under k, and drops the oldest
// renderings while they hold more than maxRenderBytes.
func (rs *renders) sized(k renderKey, r *rendering) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[k] != r {
		return // dropped already
	}
	r.size = int64(len(r.payload))
	rs.bytes += r.size
	for i := 0; rs.bytes > maxRenderBytes && i < maxRenders; i++ {
		rs.drop((rs.next + i) % maxRenders)
	}
}

// drop forgets the rendering in slot i of the ring.
func (rs *renders) drop(i int) {
	k := rs.order[i]
	if k == (renderKey{}) {
		return
	}
	if r := rs.m[k]; r != nil {
		rs.bytes -= r.size
		delete(rs.m, k)
	}
	rs.order[i] = renderKey{}
}

// callerKey identifies a caller for renders: two callers with the same key
// are decided alike by the rule layer.
func callerKey(c *resourceapi.Caller) string {
	if c == nil {
		return ""
	}
	perms := make([]string, 0, len(c.Permissions))
	for p, ok := range c.Permissions {
		if ok {
			perms = append(perms, string(p))
		}
	}
	slices.Sort(perms)
	roles := slices.Sorted(slices.Values(c.Roles))
	b, _ := json.Marshal([]any{c.UserID, c.Name, roles, perms})
	return string(b)
}

// acquire counts a subscription against the connection's cap, and returns
// the function that releases it.
func (c *wsConn) acquire() (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counted >= c.h.cfg.WebSocket.MaxSubscriptions {
		return nil, &resourceapi.Error{Code: resourceapi.CodeRateLimited,
			Message: "Too many subscriptions on this connection; close one first"}
	}
	c.counted++
	c.h.subscriptions.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.counted--
			c.mu.Unlock()
			c.h.subscriptions.Add(-1)
		})
	}, nil
}

func (c *wsConn) complete(id string) { c.write(wsMessage{ID: id, Type: "complete"}) }

// writeResponse sends a result of operation id: next, or data in graphql-ws.
func (c *wsConn) writeResponse(id string, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		c.h.logger.Error("graphql: encoding a subscription response", "err", err)
		return
	}
	c.writeMessage(id, b)
}

// writeMessage sends an encoded result of operation id.
func (c *wsConn) writeMessage(id string, payload []byte) {
	payload = c.h.capResponse(payload) // RESPONSE_TOO_LARGE past Options.MaxResponseBytes
	typ := "next"
	if c.legacy {
		typ = "data"
	}
	c.write(wsMessage{ID: id, Type: typ, Payload: payload})
}

// writeErrors sends a message of type typ whose payload is errs.
func (c *wsConn) writeErrors(typ, id string, errs ...*gqlerror.Error) {
	var payload any = errs
	if typ == "connection_error" && len(errs) == 1 {
		payload = errs[0]
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return
	}
	c.write(wsMessage{ID: id, Type: typ, Payload: b})
}

// write sends m within WebSocketOptions.WriteTimeout. A write that times out
// closes the connection: a client that does not read is disconnected, and
// whatever waited to be sent to it is released.
func (c *wsConn) write(m wsMessage) {
	bp := messageBuffers.Get().(*[]byte)
	b := appendMessage((*bp)[:0], m)
	c.send(b)
	if cap(b) <= maxPooledMessage {
		*bp = b[:0]
		messageBuffers.Put(bp)
	}
}

// messageBuffers are the buffers messages are encoded in: coder/websocket
// copies a message into the connection's buffer or writes it through, so a
// buffer is free again once the message is written. Fan-out encodes one
// message for each subscriber.
var messageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledMessage bounds the buffers kept in messageBuffers.
const maxPooledMessage = 64 << 10

// appendMessage appends m, encoded as json.Marshal would but without
// validating and compacting its payload again, which the server encoded
// itself (or, for a pong, decoded from JSON).
func appendMessage(b []byte, m wsMessage) []byte {
	b = append(b, '{')
	if m.ID != "" {
		b = appendString(append(b, `"id":`...), m.ID)
		b = append(b, ',')
	}
	b = append(append(append(b, `"type":"`...), m.Type...), '"') // a constant of the protocol
	if len(m.Payload) > 0 {
		b = append(append(b, `,"payload":`...), m.Payload...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: as it is, quoted, when nothing
// in it needs escaping (the operation ids clients choose), else as
// encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// send writes one encoded message (see write). One timer per connection,
// armed again for each write, bounds the write in progress: a context with
// a deadline for each message would cost a timer and, in coder/websocket,
// a callback of its own per message, which fan-out multiplies by every
// subscriber. wmu makes writes take turns, so the timer bounds one at a
// time; a write waiting for its turn waits at most for the one in progress
// to end or time out, which closes the connection.
func (c *wsConn) send(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	timeout := c.h.cfg.WebSocket.WriteTimeout
	if c.wtimer == nil {
		c.wtimer = time.AfterFunc(timeout, c.writeTimedOut)
	} else {
		c.wtimer.Reset(timeout)
	}
	c.writeSince.Store(monoNow())
	err := c.conn.Write(context.Background(), websocket.MessageText, b)
	c.writeSince.Store(0)
	c.wtimer.Stop()
	if err != nil {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}
}

// writeTimedOut closes the connection whose write outlasted WriteTimeout,
// without a closing handshake (its client does not read): the write in
// progress fails, the reader ends, and the connection is released.
func (c *wsConn) writeTimedOut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.conn.CloseNow()
}

// closeWith closes the connection with code and reason, once, without
// waiting for the client's half of the closing handshake.
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	c.mu.Unlock()
	if c.conn == nil || closed {
		return
	}
	c.stop()
	go c.conn.Close(code, reason)
}

// stop releases the connection's timers.
func (c *wsConn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initTimer != nil {
		c.initTimer.Stop()
	}
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
	}
}

// ping keeps an idle connection alive and finds dead peers: a WebSocket
// ping, which must be answered within the interval, and for the legacy
// graphql-ws protocol a "ka" message, which its clients watch for. It
// re-arms itself; an idle connection costs a timer, not a goroutine.
func (c *wsConn) ping() {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	ws := c.h.cfg.WebSocket
	if c.legacy {
		c.write(wsMessage{Type: "ka"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), ws.PingInterval)
	defer cancel()
	if err := c.conn.Ping(ctx); err != nil {
		c.closeWith(websocket.StatusGoingAway, "no answer to ping")
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.pingTimer.Reset(ws.PingInterval)
	}
	c.mu.Unlock()
}

// wsConns are the open subscription connections, for Shutdown and the caps
// per client address and per caller (WebSocketOptions.MaxPerAddr,
// MaxPerCaller), which this instance counts: a connection is counted from
// its upgrade (its address) and its connection_init (its caller) until it
// ends.
type wsConns struct {
	mu      sync.Mutex
	conns   map[*wsConn]struct{}
	perAddr map[string]int
	perUser map[int64]int
	closed  bool
}

type addResult int

const (
	added addResult = iota
	addShuttingDown
	addTooMany
)

// add counts c, from its client address, unless max (negative: no cap)
// connections from that address are open already.
func (s *wsConns) add(c *wsConn, max int) addResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return addShuttingDown
	}
	if s.conns == nil {
		s.conns = make(map[*wsConn]struct{})
		s.perAddr = make(map[string]int)
		s.perUser = make(map[int64]int)
	}
	if max >= 0 && s.perAddr[c.client] >= max {
		return addTooMany
	}
	s.perAddr[c.client]++
	s.conns[c] = struct{}{}
	return added
}

// addCaller counts c against its caller's user, unless max (negative: no
// cap) connections of that user are open already. The service itself (user
// 0) is not capped.
func (s *wsConns) addCaller(c *wsConn, user int64, max int) bool {
	if user == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return false // ended meanwhile
	}
	if max >= 0 && s.perUser[user] >= max {
		return false
	}
	s.perUser[user]++
	c.user = user
	return true
}

func (s *wsConns) remove(c *wsConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perAddr[c.client]--; s.perAddr[c.client] <= 0 {
		delete(s.perAddr, c.client)
	}
	if c.user != 0 {
		if s.perUser[c.user]--; s.perUser[c.user] <= 0 {
			delete(s.perUser, c.user)
		}
		c.user = 0
	}
}

// Connections returns how many subscription connections are open, and how
// many of them are counted against an address and a user: for tests and
// metrics.
func (h *Handler) Connections() (open, addresses, users int) {
	h.conns.mu.Lock()
	defer h.conns.mu.Unlock()
	for _, n := range h.conns.perAddr {
		addresses += n
	}
	for _, n := range h.conns.perUser {
		users += n
	}
	return len(h.conns.conns), addresses, users
}

// Subscriptions returns how many subscriptions are open, on every
// connection: for metrics.
func (h *Handler) Subscriptions() int { return int(h.subscriptions.Load()) }

// Shutdown closes every subscription connection (1000, "terminated") and
// refuses new ones: for http.Server.RegisterOnShutdown, as net/http does
// not track hijacked connections.
func (h *Handler) Shutdown() {
	h.conns.mu.Lock()
	h.conns.closed = true
	conns := make([]*wsConn, 0, len(h.conns.conns))
	for c := range h.conns.conns {
		conns = append(conns, c)
	}
	h.conns.mu.Unlock()
	for _, c := range conns {
		c.cancel()
	}
}
