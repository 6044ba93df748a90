// Package webhook delivers events to HTTP endpoints as the Standard
// Webhooks specification (https://www.standardwebhooks.com) describes them:
// a JSON body, and the headers webhook-id (the same on every attempt: a
// receiver drops repeats by it), webhook-timestamp and webhook-signature
// (v1: HMAC-SHA256 of "<id>.<timestamp>.<body>", one signature per secret,
// so that both the old and the new secret sign while a secret is rotated).
//
// Every connection is made by a dialer that checks the address it is about
// to reach, after DNS, on every attempt: loopback, private, link-local
// (the cloud metadata address 169.254.169.254 among them), unspecified and
// multicast addresses are refused unless Options.AllowPrivate, so that a
// registered URL cannot make the service reach what it alone can reach
// (server-side request forgery). Redirects are not followed. URLs must be
// https unless Options.AllowHTTP.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/resourceapi/resourceapi"
)

// SecretPrefix starts every secret, as the specification writes them.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: SecretPrefix and 32 random bytes
// in base64 (resourceapi.NewWebhookSecret, which the rule layer calls).
func NewSecret() string { return resourceapi.NewWebhookSecret() }

// key returns the HMAC key of secret.
func key(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(k) == 0 {
		return nil, errors.New("webhook: a secret is whsec_ followed by base64")
	}
	return k, nil
}

// Sign returns the webhook-signature header of a message: "v1,<base64>"
// for each secret, separated by spaces.
func Sign(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	var sigs []string
	for _, s := range secrets {
		k, err := key(s)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte(msgID + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	if len(sigs) == 0 {
		return "", errors.New("webhook: no secret to sign with")
	}
	return strings.Join(sigs, " "), nil
}

// Options say what a Client may reach.
type Options struct {
	// AllowHTTP accepts plain http URLs (RESOURCEAPI_WEBHOOKS_ALLOW_HTTP).
	AllowHTTP bool
	// AllowPrivate lets connections reach loopback, private and link-local
	// addresses (RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE): for tests whose
	// receiver listens on loopback, and for deployments whose receivers are
	// on the private network by design. Never on by default.
	AllowPrivate bool
	// Timeout bounds one attempt (connection, request, response); default
	// 10 s.
	Timeout time.Duration
	// TLS, when set, configures TLS (a test's own certificate authority).
	TLS *tls.Config
}

// ErrForbiddenAddress is the error of a connection to an address that the
// options forbid.
var ErrForbiddenAddress = errors.New("webhook: the address is not reachable from this service (loopback, private, link-local or metadata)")

// CheckURL returns why raw is not a URL deliveries may go to, or nil. The
// address is checked again when each connection is made.
func CheckURL(raw string, opts Options) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("webhook: %q is not an absolute URL", raw)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && opts.AllowHTTP:
	default:
		return fmt.Errorf("webhook: the URL must be https")
	}
	if u.User != nil {
		return fmt.Errorf("webhook: the URL must not carry credentials")
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !opts.AllowPrivate && forbidden(a) {
		return ErrForbiddenAddress
	}
	return nil
}

// metadata are cloud metadata addresses outside the ranges forbidden below.
var metadata = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (carrier NAT; Alibaba's metadata)
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64 of any IPv4 address
}

// forbidden reports whether a is an address deliveries must not reach.
func forbidden(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
		return true
	}
	for _, p := range metadata {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// NewClient returns the HTTP client of deliveries: no proxy (a proxy would
// connect where the dialer cannot check), a dialer that refuses forbidden
// addresses on every connection, no redirects, a timeout per attempt.
func NewClient(opts Options) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return ErrForbiddenAddress
		}
		if !opts.AllowPrivate && forbidden(ap.Addr()) {
			return ErrForbiddenAddress
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       opts.TLS,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Message is one event as an endpoint receives it.
type Message struct {
	// ID is the webhook-id: "evt_<event id>", the same on every attempt
	// and replay, by which a receiver drops what it already has.
	ID   string
	Body []byte
}

// NewMessage returns the message of ev: {"type", "timestamp", "data"} as
// the specification suggests, data holding the event's id, resource,
// actor and record.
func NewMessage(ev resourceapi.Event) (Message, error) {
	rec := json.RawMessage("null")
	if res := resourceapi.ResourceNamed(ev.Resource); res != nil && ev.Record != nil {
		b, err := resourceapi.MarshalRecord(res, ev.Record)
		if err != nil {
			return Message{}, err
		}
		rec = b
	}
	body, err := json.Marshal(map[string]any{
		"type":      ev.Name,
		"timestamp": ev.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		"data":      map[string]any{"id": ev.ID, "resource": ev.Resource, "actor": ev.Actor, "record": rec},
	})
	if err != nil {
		return Message{}, err
	}
	return Message{ID: "evt_" + strconv.FormatInt(ev.ID, 10), Body: body}, nil
}

// Attempt is the outcome of one delivery attempt, as the delivery log
// shows it.
type Attempt struct {
	Status  int // the response's status; 0 when none came
	Latency time.Duration
	// Snippet is the start of the response body (at most 256 bytes), or
	// why there was no response.
	Snippet string
}

// OK reports whether the endpoint accepted the message (2xx).
func (a Attempt) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Send makes one attempt to deliver m to url, signed with secrets, at now.
func Send(ctx context.Context, client *http.Client, url string, secrets []string, m Message, now time.Time) Attempt {
	sig, err := Sign(secrets, m.ID, now, m.Body)
	if err != nil {
		return Attempt{Snippet: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(m.Body))
	if err != nil {
		return Attempt{Snippet: "invalid URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "resourceapi-webhooks")
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		msg := "no response"
		if errors.Is(err, ErrForbiddenAddress) {
			msg = ErrForbiddenAddress.Error()
		} else if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Timeout") {
			msg = "timed out"
		}
		return Attempt{Latency: time.Since(start), Snippet: msg}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
	return Attempt{Status: resp.StatusCode, Latency: time.Since(start), Snippet: strings.ToValidUTF8(string(snippet), "\uFFFD")}
}

// Backoff is the retry schedule: the wait before attempt n+1 after n
// failures is First doubled n-1 times, capped at Max, with jitter (from
// half to the whole of it); after Period since the first attempt the
// delivery is dead-lettered.
type Backoff struct {
	First, Max, Period time.Duration
}

// DefaultBackoff starts at 5 s and caps at 1 h, for 24 h: an endpoint that
// fails twice is delivered within a minute.
var DefaultBackoff = Backoff{First: 5 * time.Second, Max: time.Hour, Period: 24 * time.Hour}

// Wait returns the wait after failures failed attempts (1 or more).
func (b Backoff) Wait(failures int) time.Duration {
	d := b.First
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + mrand.N(d/2+1)
}

// Outcome is how Deliver ended.
type Outcome struct {
	Attempts []Attempt
	// Delivered: the endpoint accepted it; otherwise it is dead-lettered
	// (Period passed) or ctx ended.
	Delivered bool
}

// Deliver sends m to url until the endpoint accepts it, retrying by b,
// and reports every attempt to observe as it ends (the delivery log).
func Deliver(ctx context.Context, client *http.Client, url string, secrets func() []string, m Message, b Backoff, observe func(Attempt)) Outcome {
	var out Outcome
	start := time.Now()
	for {
		a := Send(ctx, client, url, secrets(), m, time.Now())
		out.Attempts = append(out.Attempts, a)
		if observe != nil {
			observe(a)
		}
		if a.OK() {
			out.Delivered = true
			return out
		}
		wait := b.Wait(len(out.Attempts))
		if time.Since(start)+wait > b.Period {
			return out
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out
		case <-t.C:
		}
	}
}
