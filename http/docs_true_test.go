package http_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rhttp "github.com/resourceapi/resourceapi/http"
)

// docURL finds the server URLs the documentation's examples use.
var docURL = regexp.MustCompile(`localhost:8080(/[^\s'"\x60;)]*)`)

// TestDocsNameServedPaths reads every example URL of the README and of
// docs/*.md and checks that the server has a route for its path: an
// endpoint renamed or removed fails here until the docs follow.
func TestDocsNameServedPaths(t *testing.T) {
	store := mustSQLite(t, newClock().Now)
	cfg := testConfig(t, store)
	stand := http.NotFoundHandler()
	cfg.OAuth, cfg.GraphQL, cfg.Metrics = stand, stand, stand
	cfg.EventStream = &rhttp.EventStreamConfig{}
	srv := rhttp.NewServer(cfg)
	mux := http.NewServeMux()
	for _, p := range srv.RoutePatterns() {
		mux.Handle(p, stand)
	}
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docURL.FindAllStringSubmatch(string(b), -1) {
			path, _, _ := strings.Cut(m[1], "?")
			path = strings.TrimRight(path, ".,:`")
			found := false
			for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
				if _, pattern := mux.Handler(httptest.NewRequest(method, path, nil)); pattern != "" {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: the example URL %s names no route of the server", filepath.Base(f), m[0])
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d example URLs found in the docs; the pattern no longer finds them", checked)
	}
}
