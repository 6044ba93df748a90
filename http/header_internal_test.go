package http

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// TestHeaderValueKeysAreCanonical checks every header name this package
// reads or sets without canonicalising it: the literal keys of headerValue
// and of header maps indexed directly. A key that is not canonical would
// never match what net/http stored.
func TestHeaderValueKeysAreCanonical(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(-[A-Za-z0-9]+)*$`)
	fset := token.NewFileSet()
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(lit ast.Expr) {
			bl, ok := lit.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return
			}
			key, err := strconv.Unquote(bl.Value)
			if err != nil || !name.MatchString(key) {
				return
			}
			checked++
			if got := http.CanonicalHeaderKey(key); got != key {
				t.Errorf("%s: header key %q is not canonical (%q)", fset.Position(bl.Pos()), key, got)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "headerValue" && len(n.Args) == 2 {
					check(n.Args[1])
				}
			case *ast.IndexExpr:
				check(n.Index) // h["Etag"], r.Header["Accept"]: any capitalised name
			}
			return true
		})
	}
	if checked < 20 {
		t.Errorf("checked %d keys: the test no longer finds them", checked)
	}
}

func TestHeaderValue(t *testing.T) {
	h := http.Header{}
	h.Add("Content-Length", "12")
	h.Add("Content-Length", "13")
	for _, key := range []string{"Content-Length", "Etag", "X-Request-Id"} {
		if got, want := headerValue(h, key), h.Get(key); got != want {
			t.Errorf("headerValue(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestSetRateLimitHeaders compares setRateLimitHeaders, which formats the five
// values into one string, with each header formatted on its own as before
// it did: the same bytes for limits and remainders of any size, a spent or
// overdrawn budget, windows of fractions of seconds and none, and a reset
// in the past.
func TestSetRateLimitHeaders(t *testing.T) {
	now := time.Date(2026, 11, 29, 16, 40, 0, 250e6, time.UTC)
	for _, d := range []resourceapi.RateDecision{
		{Allowed: true, Limit: 600, Remaining: 599, Window: time.Minute, Reset: now.Add(time.Second)},
		{Limit: 0, Remaining: -3, Window: 0, Reset: now.Add(-time.Hour)},
		{Limit: 1, Remaining: 0, Window: 1500 * time.Millisecond, Reset: now.Add(1499 * time.Millisecond)},
		{Limit: math.MaxInt32, Remaining: math.MaxInt32, Window: 24 * time.Hour, Reset: now.Add(24*time.Hour + time.Nanosecond)},
		{Limit: 10, Remaining: 10, Window: time.Nanosecond, Reset: now},
	} {
		want := http.Header{}
		want.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		want.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
		want.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(d.Reset.UnixNano())/1e9)), 10))
		policy := `"caller";q=` + strconv.Itoa(d.Limit)
		if w := int64(math.Ceil(d.Window.Seconds())); w > 0 {
			policy += ";w=" + strconv.FormatInt(w, 10)
		}
		want.Set("RateLimit-Policy", policy)
		want.Set("RateLimit", `"caller";r=`+strconv.Itoa(max(d.Remaining, 0))+";t="+
			strconv.FormatInt(max(int64(math.Ceil(d.Reset.Sub(now).Seconds())), 0), 10))
		got := http.Header{}
		var vals rateLimitHeaders
		setRateLimitHeaders(got, &vals, d, now)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\n got %v\nwant %v", d, got, want)
		}
		got.Add("X-RateLimit-Limit", "more") // must not write into the next value
		if got.Get("X-RateLimit-Remaining") != want.Get("X-RateLimit-Remaining") {
			t.Errorf("%+v: adding to one header changed the next: %v", d, got)
		}
	}
}
