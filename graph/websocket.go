package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"

	"github.com/resourceapi/resourceapi"
)

// WebSocket close codes the server uses besides the protocols' own.
const (
	closeForbidden   = 4403 // no valid credential in connection_init or on the upgrade
	closeInitTimeout = 4408 // no connection_init within WebSocketOptions.InitTimeout
	closeTooSlow     = 1008 // policy violation: the subscriber fell behind its buffer
)

// wsConn is the server's state of one subscription WebSocket. It goes into
// the upgrade request's context before gqlgen's transport accepts the
// connection, so that the connection's resolvers find it there: to count
// their subscriptions, and to close the connection of a subscriber that
// fell behind.
type wsConn struct {
	h      *Handler
	client string // the client address, for password throttling
	// cancel ends the connection's context, which closes it.
	cancel context.CancelFunc
	// accepted is closed once the connection is hijacked.
	accepted chan struct{}

	mu     sync.Mutex
	conn   *websocket.Conn
	proto  string
	subs   int
	closed bool

	inited    atomic.Bool
	initTimer *time.Timer
	pingTimer *time.Timer
}

type wsConnKey struct{}

func wsConnFrom(ctx context.Context) *wsConn {
	c, _ := ctx.Value(wsConnKey{}).(*wsConn)
	return c
}

// serveWebSocket serves a subscription connection (gqlgen's transport,
// over wsImplementation) in a goroutine of its own: once the connection is
// hijacked, the request's goroutine returns, and with it the deep stack of
// the middleware it ran through, which a long-lived connection would
// otherwise keep (about a third of an idle subscriber's memory). The
// connection's context keeps the request's values (the caller) but not its
// cancellation, which ends when the handler returns: Shutdown ends it.
func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConn{h: h, cancel: cancel, accepted: make(chan struct{})}
	if h.cfg.ClientIP != nil {
		c.client = h.cfg.ClientIP(r)
	}
	if !h.conns.add(c) {
		cancel()
		writeRequestError(w, http.StatusServiceUnavailable, mediaJSON, "UNAVAILABLE", "The server is shutting down")
		return
	}
	r = r.WithContext(context.WithValue(ctx, wsConnKey{}, c))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer h.conns.remove(c)
		defer cancel()
		defer c.stop()
		h.exec.ServeHTTP(w, r)
	}()
	select {
	case <-c.accepted: // the connection is the goroutine's now
	case <-done: // refused before the upgrade: the response is written
	}
}

// wsConns are the open subscription connections, for Shutdown.
type wsConns struct {
	mu     sync.Mutex
	conns  map[*wsConn]struct{}
	closed bool
}

func (s *wsConns) add(c *wsConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*wsConn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *wsConns) remove(c *wsConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

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

// closeWith closes the connection with code and reason, once, without
// waiting for the client's half of the closing handshake.
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	conn, closed := c.conn, c.closed
	c.closed = true
	c.mu.Unlock()
	if conn == nil || closed {
		return
	}
	c.stop()
	go conn.Close(code, reason)
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
}

// ping keeps an idle connection alive and finds dead peers: a WebSocket
// ping, which must be answered within the interval, and for the legacy
// graphql-ws protocol a "ka" message, which its clients watch for. It
// re-arms itself; an idle connection costs a timer, not a goroutine.
func (c *wsConn) ping() {
	c.mu.Lock()
	conn, closed := c.conn, c.closed
	c.mu.Unlock()
	if conn == nil || closed {
		return
	}
	ws := c.h.cfg.WebSocket
	ctx, cancel := context.WithTimeout(context.Background(), ws.PingInterval)
	defer cancel()
	if c.proto != "graphql-transport-ws" {
		if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ka"}`)); err != nil {
			c.closeWith(websocket.StatusGoingAway, "keep-alive failed")
			return
		}
	}
	if err := conn.Ping(ctx); err != nil {
		c.closeWith(websocket.StatusGoingAway, "no answer to ping")
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.pingTimer.Reset(ws.PingInterval)
	}
	c.mu.Unlock()
}

// acquire counts a subscription against the connection's cap, and returns
// the function that releases it.
func (c *wsConn) acquire() (release func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs >= c.h.cfg.WebSocket.MaxSubscriptions {
		return nil, &resourceapi.Error{Code: resourceapi.CodeRateLimited,
			Message: "Too many subscriptions on this connection; close one first"}
	}
	c.subs++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.subs--
			c.mu.Unlock()
		})
	}, nil
}

// wsInit is the transport's InitFunc: it authenticates the connection_init
// payload's credential ({"Authorization": "Bearer ..."}, {"X-API-Key":
// "..."} or Basic; names in any case), or else takes the upgrade request's.
// Without a valid one the connection is closed with 4403.
func (h *Handler) wsInit(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	c := wsConnFrom(ctx)
	if c != nil {
		c.inited.Store(true)
	}
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
	refuse := func(reason string) (context.Context, *transport.InitPayload, error) {
		ctx = transport.WithWebsocketCloseCode(ctx, closeForbidden)
		ctx = transport.AppendCloseReason(ctx, reason)
		return ctx, nil, errors.New(reason)
	}
	if len(apiKey)+len(authorization) > 0 {
		cred, err := resourceapi.ParseCredential(apiKey, authorization)
		if err != nil || h.cfg.Auth == nil {
			return refuse("Forbidden: the credential is not valid")
		}
		if c != nil {
			cred.Client = c.client
		}
		who, err := h.cfg.Auth.Authenticate(ctx, cred)
		if err != nil {
			return refuse("Forbidden: the credential is not valid")
		}
		ctx = resourceapi.WithCaller(resourceapi.WithCredentialError(ctx, nil), who)
		return ctx, nil, nil
	}
	if resourceapi.CredentialErrorFrom(ctx) != nil {
		return refuse("Forbidden: the credential is not valid")
	}
	if resourceapi.CallerFrom(ctx) == nil {
		return refuse("Forbidden: a credential is required")
	}
	return ctx, nil, nil
}

// wsImplementation accepts subscription connections for gqlgen's transport
// with coder/websocket: origins checked (the server's own and
// Options.Origins), no compression, a write timeout on every message, the
// init timeout, and keep-alive pings.
type wsImplementation struct{ h *Handler }

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	// The current protocol first: a client offering both gets it.
	protos := []string{"graphql-transport-ws", "graphql-ws"}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:    protos,
		OriginPatterns:  i.h.cfg.Origins,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	c := wsConnFrom(r.Context())
	if c == nil {
		c = &wsConn{h: i.h, cancel: func() {}, accepted: make(chan struct{})}
	}
	close(c.accepted)
	ws := i.h.cfg.WebSocket
	c.mu.Lock()
	c.conn, c.proto = conn, conn.Subprotocol()
	c.initTimer = time.AfterFunc(ws.InitTimeout, func() {
		if !c.inited.Load() {
			c.closeWith(closeInitTimeout, "Connection initialisation timeout")
		}
	})
	c.pingTimer = time.AfterFunc(ws.PingInterval, c.ping)
	c.mu.Unlock()
	return &wsAdapter{conn: conn, c: c, timeout: ws.WriteTimeout}, nil
}

// wsAdapter is transport.WebsocketConn over a coder/websocket connection.
type wsAdapter struct {
	conn    *websocket.Conn
	c       *wsConn
	timeout time.Duration
}

// Close closes the connection at once, unless WriteClose began the closing
// handshake, which then closes it.
func (a *wsAdapter) Close() error {
	a.c.stop()
	a.c.mu.Lock()
	closing := a.c.closed
	a.c.closed = true
	a.c.mu.Unlock()
	if closing {
		return nil
	}
	return a.conn.CloseNow()
}

func (a *wsAdapter) NextReader() (int, io.Reader, error) {
	typ, data, err := a.conn.Read(context.Background())
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd, websocket.StatusGoingAway:
			return 0, nil, transport.ErrWebsocketClosed
		}
		return 0, nil, err
	}
	return int(typ), bytes.NewReader(data), nil
}

func (a *wsAdapter) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	// A write that times out closes the connection (coder/websocket): a
	// client that does not read is disconnected, and whatever waited to be
	// sent to it is released.
	return a.conn.Write(ctx, websocket.MessageText, data)
}

func (a *wsAdapter) WriteClose(code int, reason string) error {
	a.c.closeWith(websocket.StatusCode(code), reason)
	return nil
}

func (a *wsAdapter) Subprotocol() string { return a.conn.Subprotocol() }

func (a *wsAdapter) SetReadLimit(limit int64) { a.conn.SetReadLimit(limit) }
