package graph_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// envelopeBodies are bodies parseEnvelope reads and bodies it leaves to
// encoding/json.
var envelopeBodies = []string{
	`{"query":"{ me { id } }"}`,
	` { "query" : "query($id: ID!) { user(id: $id) { name } }" , "variables" : { "id" : "7" } } `,
	`{"query":"q","operationName":null,"variables":null,"extensions":null}`,
	`{"query":"q","operationName":"Op","variables":{"a":1,"b":-0.5e+3,"c":true,"d":false,"e":null,"f":"x","a":2},"extensions":{}}`,
	`{"query":"q","variables":{"n":12345678901234567890}}`,
	`{"query":"é ✓","variables":{"é":"\u00e9"}}`,
	`{"query":"q\n"}`,
	`{"query":"q","variables":{"o":{"x":1}}}`,
	`{"query":"q","variables":{"l":[1,2]}}`,
	`{"query":"q","query":"r"}`,
	`{"Query":"q"}`,
	`{"query":"q","other":1}`,
	`{"query":null}`,
	`{"query":""}`,
	`{"query":1}`,
	`{}`,
	`{"query":"q"} x`,
	`{"query":"q",}`,
	`{"query":"q","variables":{"n":01}}`,
	`{"query":"q","variables":{"n":-}}`,
	`{"query":"q","variables":{"n":1.}}`,
	`{"query":"q","variables":{"n":1e}}`,
	`{"query":"q","variables":{"t":tru}}`,
	`{"query":"q","variables":{"t":truex}}`,
	`{"query":"q","variables":[]}`,
	`{"query":"q","operationName":5}`,
	`{"query":"q"`,
	`{"query":"q" "x":1}`,
	"{\"query\":\"a\tb\"}",
	`{"query":"q","variables":{"id":"7"}}`,
	`{"query":"q","variables":{ "id" : "x y" , "id":"z"}}`,
	`{"query":"q","variables":{"id":7}}`,
}

// TestEnvelopeAsEncodingJSON checks that every body parseEnvelope reads
// gives what encoding/json gives (fromBody's decoding of any other body).
func TestEnvelopeAsEncodingJSON(t *testing.T) {
	read := 0
	for _, b := range envelopeBodies {
		if checkEnvelope(t, []byte(b)) {
			read++
		}
	}
	if read != 8 {
		t.Errorf("parseEnvelope read %d of the bodies, want 8", read)
	}
	for _, tc := range []struct {
		body, name, v string
		ok            bool
	}{
		{`{"query":"q","variables":{"id":"7"}}`, "id", "7", true},
		{`{"query":"q","variables": { "id" : "é 7" } }`, "id", "é 7", true},
		{`{"query":"q","variables":{"id":"7"}}`, "ID", "", false},
		{`{"query":"q","variables":{"id":"7","x":1}}`, "id", "", false},
		{`{"query":"q","variables":{"id":"7","id":"8"}}`, "id", "", false},
		{`{"query":"q","variables":{"id":7}}`, "id", "", false},
		{`{"query":"q","variables":{"id":null}}`, "id", "", false},
		{`{"query":"q","variables":{}}`, "id", "", false},
		{`{"query":"q","variables":null}`, "id", "", false},
		{`{"query":"q"}`, "id", "", false},
	} {
		v, ok, readable := graph.PlanVariable([]byte(tc.body), tc.name)
		if !readable || v != tc.v || ok != tc.ok {
			t.Errorf("%s: plan's variable %s: %q %v (read %v), want %q %v", tc.body, tc.name, v, ok, readable, tc.v, tc.ok)
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	for _, b := range envelopeBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if utf8.Valid(body) {
			checkEnvelope(t, body)
		}
	})
}

// checkEnvelope reports whether parseEnvelope read body, and fails when
// what it read is not what encoding/json reads.
func checkEnvelope(t *testing.T, body []byte) bool {
	t.Helper()
	q, op, vars, exts, ok := graph.ParseEnvelope(body)
	if !ok {
		return false
	}
	var env struct {
		Query         *string        `json:"query"`
		OperationName *string        `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil || len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		t.Fatalf("%s: read, but encoding/json refuses it (%v)", body, err)
	}
	wantOp := ""
	if env.OperationName != nil {
		wantOp = *env.OperationName
	}
	if env.Query == nil || *env.Query != q || wantOp != op || !reflect.DeepEqual(env.Variables, vars) || !reflect.DeepEqual(env.Extensions, exts) {
		t.Fatalf("%s: read as %q %q %#v %#v, encoding/json reads %v %q %#v %#v", body, q, op, vars, exts, env.Query, wantOp, env.Variables, env.Extensions)
	}
	// What a plan reads of the variables (plan.go) is what encoding/json
	// reads: that one string alone.
	for _, name := range append([]string{"id", ""}, slices.Collect(maps.Keys(env.Variables))...) {
		if v, ok, _ := graph.PlanVariable(body, name); ok && !reflect.DeepEqual(env.Variables, map[string]any{name: v}) {
			t.Fatalf("%s: a plan reads its variable %q as %q, encoding/json reads %#v", body, name, v, env.Variables)
		}
	}
	return true
}

// TestBodyLimit: a POST body is read whole up to Options.MaxBodyBytes and
// refused past it, whatever length the request declares.
func TestBodyLimit(t *testing.T) {
	const max = 100
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) { o.MaxBodyBytes = max })
	body := func(n int) []byte {
		b := []byte(`{"query":"{ hello }"}`)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}
	for _, tc := range []struct {
		name     string
		body     []byte
		declared int64
		status   int
	}{
		{"at the limit", body(max), max, http.StatusOK},
		{"past it", body(max + 1), max + 1, http.StatusRequestEntityTooLarge},
		{"past it, declared at it", body(max + 1), max, http.StatusRequestEntityTooLarge},
		{"past it, declared below", body(max + 1), 30, http.StatusRequestEntityTooLarge},
		{"longer than declared", body(60), 30, http.StatusOK},
		{"past it, undeclared", body(max + 1), -1, http.StatusRequestEntityTooLarge},
		{"at it, undeclared", body(max), -1, http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(tc.body))
		req.ContentLength = tc.declared
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", s.admin)
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, req)
		if w.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, w.Code, tc.status, w.Body)
		}
		if tc.status == http.StatusOK && !strings.Contains(w.Body.String(), `"hello"`) {
			t.Errorf("%s: %s", tc.name, w.Body)
		}
	}
}
