package http_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// FuzzCursorDecode reads arbitrary text as the cursor of a list. It must
// never panic; it refuses everything but the tokens the server made
// (the seeds), and a token it accepts says what was encoded in it and
// passes the rules of the query it came from.
func FuzzCursorDecode(f *testing.F) {
	cs := rhttp.NewCursors([]byte("0123456789abcdef0123456789abcdef"))
	valid := map[string]resourceapi.Cursor{}
	for _, c := range []resourceapi.Cursor{
		{Sort: "id", ID: 7},
		{Sort: "name", Value: "Ann \"quoted\" \u00e9", ID: 12},
		{Sort: "age", Value: nil, ID: 3, Desc: true},
		{Sort: "age", Value: int64(42), ID: 3},
		{Sort: "created_at", Value: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), ID: 99},
	} {
		tok := cs.Encode(resourceapi.Users, c)
		valid[tok] = c
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
		f.Add(tok + "A")
	}
	for _, s := range []string{"", "A", "====", "eyJyIjoidXNlcnMifQ", "%00", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, why := cs.Decode(resourceapi.Users, s)
		want, ok := valid[s]
		if !ok {
			if why == "" {
				t.Fatalf("Decode(%q) accepted a token the server never made: %+v", s, c)
			}
			return
		}
		if why != "" {
			t.Fatalf("Decode(own token %q) = %q", s, why)
		}
		if c.Sort != want.Sort || c.Desc != want.Desc || c.ID != want.ID {
			t.Fatalf("Decode = %+v, want %+v", c, want)
		}
		if wt, isTime := want.Value.(time.Time); isTime {
			if got, _ := c.Value.(time.Time); !got.Equal(wt) {
				t.Fatalf("time %v, want %v", c.Value, wt)
			}
		} else if c.Value != want.Value {
			t.Fatalf("value %#v, want %#v", c.Value, want.Value)
		}
		// Through the query parser, the rules of the query apply.
		params := url.Values{"after": {s}, "sort": {c.Sort}}
		if c.Desc {
			params.Set("order", "desc")
		}
		q, err := cs.ParseListQuery(resourceapi.Users, params)
		var e *resourceapi.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("ParseListQuery: %v", err)
		}
		if err == nil {
			if err := q.Check(resourceapi.Users); err != nil {
				t.Fatalf("ParseListQuery returned a query that Check refuses: %v", err)
			}
		}
	})
}
