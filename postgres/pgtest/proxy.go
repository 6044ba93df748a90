package pgtest

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of the PostgreSQL server, on the loopback
// interface, for tests of what the service does when the database goes
// away: it forwards connections until told to cut them, refuse new ones, or
// answer them as a server that is starting up. It never touches the server
// itself, so other tests on the same server go on undisturbed.
type Proxy struct {
	tb     testing.TB
	target string // host:port of the server

	mu       sync.Mutex
	addr     string // the proxy's own address, kept across Refuse
	ln       net.Listener
	starting bool
	conns    map[net.Conn]struct{}
	accepted int
	trips    int // round trips of the clients (RoundTrips)
	wg       sync.WaitGroup
	closed   bool
}

// NewProxy starts a proxy in front of the server of dbURL (a URL such as
// NewDatabase returns) and returns it with the URL that reaches the same
// database through it. The proxy stops when tb ends.
func NewProxy(tb testing.TB, dbURL string) (*Proxy, string) {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := &Proxy{tb: tb, target: target, conns: map[net.Conn]struct{}{}}
	p.mu.Lock()
	err = p.listen("127.0.0.1:0")
	p.mu.Unlock()
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	tb.Cleanup(p.close)
	u.Host = p.addr
	return p, u.String()
}

// listen opens the listener on addr and serves it. p.mu is held.
func (p *Proxy) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.ln, p.addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.serve(c)
		}
	}()
	return nil
}

// serve forwards c to the server, or answers it as a server starting up.
func (p *Proxy) serve(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.accepted++
	p.wg.Add(1)
	if p.starting {
		go func() {
			defer p.wg.Done()
			defer p.drop(c)
			startingUp(c)
		}()
		return
	}
	go func() {
		defer p.wg.Done()
		defer p.drop(c)
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			return
		}
		if !p.track(up) {
			up.Close()
			return
		}
		defer p.drop(up)
		done := make(chan struct{})
		go func() {
			io.Copy(up, io.TeeReader(c, &tripCounter{p: p}))
			up.Close()
			close(done)
		}()
		io.Copy(c, up)
		c.Close()
		<-done
	}()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// startingUp answers a connection as PostgreSQL does while it starts up:
// the startup message gets the FATAL error 57P03.
func startingUp(c net.Conn) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for {
		var head [8]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[:4]))
		if n < 8 || n > 1<<16 {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(n-8)); err != nil {
			return
		}
		code := binary.BigEndian.Uint32(head[4:])
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest: no
			c.Write([]byte{'N'})
			continue
		}
		break
	}
	var fields []byte
	for _, f := range []struct {
		t byte
		v string
	}{{'S', "FATAL"}, {'V', "FATAL"}, {'C', "57P03"}, {'M', "the database system is starting up"}} {
		fields = append(fields, f.t)
		fields = append(fields, f.v...)
		fields = append(fields, 0)
	}
	fields = append(fields, 0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+len(fields)))
	c.Write(append(msg, fields...))
}

// Accepted returns how many connections the proxy has accepted since it
// started: the sessions its clients opened, or tried to.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Cut closes every connection through the proxy, as a server that went
// away does; new connections are still served.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Refuse cuts every connection and closes the listener, so that new
// connections are refused, as while the server is down.
func (p *Proxy) Refuse() {
	p.Cut()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
}

// StartingUp cuts every connection and answers new ones with 57P03, "the
// database system is starting up".
func (p *Proxy) StartingUp() {
	p.Cut()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting = true
	p.reopen()
}

// Restore forwards new connections to the server again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting = false
	p.reopen()
}

// reopen listens on the proxy's address again after Refuse. p.mu is held.
func (p *Proxy) reopen() {
	if p.ln != nil {
		return
	}
	if err := p.listen(p.addr); err != nil {
		p.tb.Fatalf("pgtest: proxy: listen again on %s: %v", p.addr, err)
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// RoundTrips returns how many round trips the proxy's clients have begun:
// the messages that make the server answer what came before them, a Sync
// (which ends every extended-protocol query, and every pipeline of them) or
// a simple Query. A batch of statements sent together is one.
func (p *Proxy) RoundTrips() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trips
}

// tripCounter reads a client's side of the protocol, as it is forwarded,
// and counts its Sync and Query messages. The first message of a
// connection (its startup, or a cancel request) has no type byte; the
// proxy's clients do not ask for TLS (sslmode=disable), so every message
// after it has one.
type tripCounter struct {
	p     *Proxy
	typed bool
	hdr   []byte
	skip  int // bytes of the current message still to pass
}

func (t *tripCounter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if t.skip > 0 {
			k := min(t.skip, len(b))
			t.skip, b = t.skip-k, b[k:]
			continue
		}
		need := 4
		if t.typed {
			need = 5
		}
		k := min(need-len(t.hdr), len(b))
		t.hdr, b = append(t.hdr, b[:k]...), b[k:]
		if len(t.hdr) < need {
			break
		}
		if t.typed && (t.hdr[0] == 'S' || t.hdr[0] == 'Q') {
			t.p.mu.Lock()
			t.p.trips++
			t.p.mu.Unlock()
		}
		t.skip = int(binary.BigEndian.Uint32(t.hdr[need-4:])) - 4
		t.hdr, t.typed = t.hdr[:0], true
	}
	return n, nil
}
