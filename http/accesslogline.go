package http

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// NewAccessLogHandler returns the handler of an access log (Config.AccessLog)
// that writes to w what slog.NewTextHandler(w, opts) writes, or
// slog.NewJSONHandler(w, opts) when json is set, and is one: every record
// it is handed, and every handler derived from it (WithAttrs, WithGroup),
// goes through that handler of package slog.
//
// What it adds is the access log's own line: the server writes it with a
// formatter for its fixed attributes (request_id, method, path, status,
// bytes, duration, remote, user_agent) that writes byte for byte what slog's
// handler writes for the same record (accessLine; TestAccessLineAsSlog and
// FuzzAccessLine compare the two), without building the record, into a
// pooled buffer, then to w under the lock slog's handler writes under too.
// The level and w are the handler's; with opts.ReplaceAttr or
// opts.AddSource set, or when the logger's handler is any other (one that
// adds trace ids, a user's own), the line goes through slog as a record.
func NewAccessLogHandler(w io.Writer, opts *slog.HandlerOptions, json bool) slog.Handler {
	lw := &lockedWriter{w: w}
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(lw, opts)
	} else {
		h = slog.NewTextHandler(lw, opts)
	}
	return &accessHandler{
		Handler: h,
		w:       lw,
		json:    json,
		own:     opts == nil || opts.ReplaceAttr == nil && !opts.AddSource,
	}
}

// accessHandler is NewAccessLogHandler's handler: slog's, and the access
// line's formatter beside it.
type accessHandler struct {
	slog.Handler // slog's text or JSON handler, writing to w
	w            *lockedWriter
	json         bool // the format is slog.JSONHandler's
	own          bool // the access line may be written by accessLine
	// second is the text time of the last line's second (appendTime).
	second atomic.Pointer[lineSecond]
}

// lockedWriter serialises the writes of slog's handler and the access
// line's to one writer, each line one Write, as slog's handler alone does.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ownAccessLine returns h as an accessHandler whose formatter may write the
// access line, or nil.
func ownAccessLine(h slog.Handler) *accessHandler {
	if a, ok := h.(*accessHandler); ok && a.own {
		return a
	}
	return nil
}

// accessFields are the access line's attributes, in their order.
type accessFields struct {
	id, method, path string
	status           int
	bytes            int64
	duration         time.Duration
	remote, agent    string
}

// record is the line as a slog record, as the access log hands it to any
// other handler.
func (f *accessFields) record(end time.Time) slog.Record {
	rec := slog.NewRecord(end, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("request_id", f.id),
		slog.String("method", f.method),
		slog.String("path", f.path),
		slog.Int("status", f.status),
		slog.Int64("bytes", f.bytes),
		slog.Duration("duration", f.duration),
		slog.String("remote", f.remote),
		slog.String("user_agent", f.agent))
	return rec
}

// accessLineBufs are the access lines' buffers.
var accessLineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeAccess writes the access line of f, ended at end, as slog's handler
// would write the record f.record(end) at LevelInfo; the caller has checked
// that the level is enabled.
func (h *accessHandler) writeAccess(ctx context.Context, end time.Time, f *accessFields) error {
	if h.json {
		if y := end.Year(); y < 0 || y >= 10000 {
			// slog adds an error to the line: let it.
			return h.Handler.Handle(ctx, f.record(end))
		}
	}
	bp := accessLineBufs.Get().(*[]byte)
	b := h.accessLine((*bp)[:0], end, f)
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 { // as slog's own buffers: a huge one is not kept
		*bp = b
		accessLineBufs.Put(bp)
	}
	return err
}

// accessLine appends the line to b.
func (h *accessHandler) accessLine(b []byte, end time.Time, f *accessFields) []byte {
	end = end.Round(0)
	if h.json {
		b = append(b, `{"time":"`...)
		b = end.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request","request_id":`...)
		b = appendJSONString(b, f.id)
		b = append(b, `,"method":`...)
		b = appendJSONString(b, f.method)
		b = append(b, `,"path":`...)
		b = appendJSONString(b, f.path)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(f.status), 10)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, f.bytes, 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, int64(f.duration), 10)
		b = append(b, `,"remote":`...)
		b = appendJSONString(b, f.remote)
		b = append(b, `,"user_agent":`...)
		b = appendJSONString(b, f.agent)
		return append(b, "}\n"...)
	}
	b = append(b, "time="...)
	b = h.appendTime(b, end)
	b = append(b, " level=INFO msg=request request_id="...)
	b = appendTextString(b, f.id)
	b = append(b, " method="...)
	b = appendTextString(b, f.method)
	b = append(b, " path="...)
	b = appendTextString(b, f.path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(f.status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, f.bytes, 10)
	b = append(b, " duration="...)
	b = append(b, f.duration.String()...)
	b = append(b, " remote="...)
	b = appendTextString(b, f.remote)
	b = append(b, " user_agent="...)
	b = appendTextString(b, f.agent)
	return append(b, '\n')
}

// lineSecond is the text of the time of access lines within one second, in
// one location: all but the milliseconds.
type lineSecond struct {
	sec          int64 // Unix time
	loc          *time.Location
	prefix, zone string // "2006-01-02T15:04:05." and "Z07:00"
}

// appendTime writes t as appendRFC3339Millis does, from the text of t's
// second kept from the line before (the lines of a second share all but
// their milliseconds): formatting a time by its layout costs more than the
// rest of the line.
func (h *accessHandler) appendTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := h.second.Load()
	if s == nil || s.sec != sec || s.loc != loc {
		if y := t.Year(); y < 0 || y > 9999 {
			return appendRFC3339Millis(b, t)
		}
		// The same second in the same location: the same offset, for a
		// zone changes its offset on a whole second.
		text := string(appendRFC3339Millis(nil, time.Unix(sec, 0).In(loc)))
		const n = len("2006-01-02T15:04:05.")
		s = &lineSecond{sec: sec, loc: loc, prefix: text[:n], zone: text[n+3:]}
		h.second.Store(s)
	}
	ms := t.Nanosecond() / 1e6
	b = append(b, s.prefix...)
	b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// What follows writes as log/slog (Go 1.26) writes, its functions of the
// same names: a change there fails TestAccessLineAsSlog and FuzzAccessLine.

// appendRFC3339Millis writes t as slog.TextHandler writes a record's time:
// RFC 3339 with exactly three digits of milliseconds, truncated.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano trims trailing zeros: a tenth of a millisecond more
	// makes four digits, the fourth dropped.
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendTextString writes s as slog.TextHandler writes a string value:
// as it is, or quoted by strconv when it needs quoting.
func appendTextString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// needsQuoting reports whether slog.TextHandler quotes s: when it is
// empty, or holds a space, '=', a character a JSON string escapes (but '\\'),
// an invalid UTF-8 sequence, or a Unicode space or non-printing character.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b != '\\' && (b == ' ' || b == '=' || !jsonSafe(b)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonSafe reports whether the ASCII byte b stands for itself in a JSON
// string as slog writes one: all but the control characters, '"' and '\\'.
func jsonSafe(b byte) bool { return b >= 0x20 && b != '"' && b != '\\' }

// appendJSONString writes s as slog.JSONHandler writes a string: quoted,
// escaped as encoding/json escapes without its HTML escapes, invalid UTF-8
// as U+FFFD, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			switch c {
			case '\\', '"':
				b = append(b, c)
			case '\n':
				b = append(b, 'n')
			case '\r':
				b = append(b, 'r')
			case '\t':
				b = append(b, 't')
			default:
				b = append(b, 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
