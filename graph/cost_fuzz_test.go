package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// The cost model's property: for any document over the schema, what the
// resolvers return is bounded by what the model computes before anything
// runs, and what they read and answer by the response's budget:
//
//   - the server refuses the document exactly when its complexity (each
//     field 1 plus its children, a list its limit times its children, or 10
//     times without one) passes 1,000;
//   - the records the response returns are at most the document's row
//     bound: its complexity when every list has a limit, and with the rows
//     unlimited lists may return (1,000 for users and posts, 100 for
//     User.posts) otherwise;
//   - the records read from the store are at most MaxRecords, and the
//     encoded response at most MaxResponseBytes, whatever the data; a
//     response stopped by either is one error with data null.
//
// FuzzCostModel draws the documents from the fuzzer's bytes;
// TestCostModelProperty runs 300 of them from a fixed seed.

// countingStore counts the records the store returns to the rule layer.
type countingStore struct {
	store
	records atomic.Int64
}

func (c *countingStore) List(ctx context.Context, res *resourceapi.Resource, q resourceapi.ListQuery) (resourceapi.Page, error) {
	p, err := c.store.List(ctx, res, q)
	c.records.Add(int64(len(p.Records)))
	return p, err
}

func (c *countingStore) Get(ctx context.Context, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	rec, err := c.store.Get(ctx, res, id)
	if rec != nil {
		c.records.Add(1)
	}
	return rec, err
}

func (c *countingStore) GetMany(ctx context.Context, res *resourceapi.Resource, ids []int64) ([]resourceapi.Record, error) {
	recs, err := c.store.(resourceapi.BatchStore).GetMany(ctx, res, ids)
	c.records.Add(int64(len(recs)))
	return recs, err
}

func (c *countingStore) ListEach(ctx context.Context, res *resourceapi.Resource, field string, values []int64, q resourceapi.ListQuery) ([]resourceapi.Record, error) {
	recs, err := c.store.(resourceapi.BatchStore).ListEach(ctx, res, field, values, q)
	c.records.Add(int64(len(recs)))
	return recs, err
}

// The budgets of the cost model's server: small enough that random
// documents reach them.
const (
	costMaxRecords = 300
	costMaxBytes   = 64 << 10
)

// costServer serves 30 users (and the admin) with 0 to 12 posts each, of
// 20 bytes to 3 KB, with small budgets, through a countingStore.
func costServer(tb testing.TB) (*server, *countingStore) {
	tb.Helper()
	st := &countingStore{store: backends()[0].open(tb, nil)}
	s := mustServer(tb, st, func(o *graph.Options, _ *rhttp.Config) {
		o.MaxRecords = costMaxRecords
		o.MaxResponseBytes = costMaxBytes
	})
	ctx := context.Background()
	for i := range 30 {
		u := s.mustUser(fmt.Sprintf("User %d", i), fmt.Sprintf("cost%d@test.example", i))
		for j := range (i % 7) * 2 {
			if _, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Posts, 0, resourceapi.Record{
				"title": fmt.Sprintf("Post %d of %d", j, i), "content": strings.Repeat("c", 20+(i*j*97)%3000),
				"author_id": u}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return s, st
}

// genField is a field of a generated document.
type genField struct {
	name, alias string
	list        bool
	limit       int // for a list: its limit argument, 0 for none
	id          int // for user and post: their id argument
	typ         string
	kids        []*genField
	inline      bool // its selections inside "... on Type"
}

// genSchema is the schema, as the generator sees it: each type's fields,
// with the object type of those that have one.
var genSchema = map[string][]struct {
	name, typ string
	list      bool
}{
	"Query": {{"hello", "", false}, {"users", "User", true}, {"user", "User", false}, {"posts", "Post", true}, {"post", "Post", false}},
	"User":  {{"id", "", false}, {"name", "", false}, {"email", "", false}, {"createdAt", "", false}, {"posts", "Post", true}},
	"Post":  {{"id", "", false}, {"title", "", false}, {"content", "", false}, {"createdAt", "", false}, {"author", "User", false}},
}

// docGen draws a document from bytes; past their end it draws zeros.
type docGen struct {
	data []byte
	pos  int
	n    int
}

func (g *docGen) pick(k int) int {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return int(b) % k
}

// set draws 1 to 3 selections of typ, nested at most 4 deep.
func (g *docGen) set(typ string, depth int) []*genField {
	var out []*genField
	for range 1 + g.pick(3) {
		defs := genSchema[typ]
		d := defs[g.pick(len(defs))]
		if d.typ != "" && depth >= 4 {
			d = defs[0] // a scalar
		}
		g.n++
		f := &genField{name: d.name, alias: fmt.Sprintf("f%d", g.n), list: d.list, typ: d.typ}
		if d.list {
			f.limit = []int{0, 0, 1, 2, 5, 10, 100}[g.pick(7)]
		}
		if d.name == "user" || d.name == "post" {
			f.id = 1 + g.pick(40)
		}
		if d.typ != "" {
			f.inline = g.pick(4) == 0
			f.kids = g.set(d.typ, depth+1)
		}
		out = append(out, f)
	}
	return out
}

func render(b *strings.Builder, fields []*genField) {
	for _, f := range fields {
		fmt.Fprintf(b, " %s: %s", f.alias, f.name)
		switch {
		case f.list && f.limit > 0:
			fmt.Fprintf(b, "(limit: %d)", f.limit)
		case f.id > 0:
			fmt.Fprintf(b, `(id: "%d")`, f.id)
		}
		if f.typ == "" {
			continue
		}
		b.WriteString(" {")
		if f.inline {
			fmt.Fprintf(b, " ... on %s {", f.typ)
		}
		render(b, f.kids)
		if f.inline {
			b.WriteString(" }")
		}
		b.WriteString(" }")
	}
}

// complexityOfFields is the cost model of decisions §6, computed apart from
// the server's.
func complexityOfFields(fields []*genField) int {
	n := 0
	for _, f := range fields {
		c := 1
		if f.typ != "" {
			kids := complexityOfFields(f.kids)
			if f.list {
				m := f.limit
				if m == 0 {
					m = 10
				}
				c += m * kids
			} else {
				c += kids
			}
		}
		n += c
	}
	return n
}

// rowBound returns the most records fields can return, on parent, with
// the caps of unlimited lists; and whether every list has a limit.
func rowBound(fields []*genField, parent string) (rows int, limited bool) {
	limited = true
	for _, f := range fields {
		if f.typ == "" {
			continue
		}
		kids, kidsLimited := rowBound(f.kids, f.typ)
		limited = limited && kidsLimited
		per := 1 + kids
		if !f.list {
			rows += per
			continue
		}
		m := f.limit
		if m == 0 {
			limited = false
			m = 1000
			if parent == "User" {
				m = 100
			}
		}
		rows += m * per
	}
	return rows, limited
}

// objects counts the JSON objects in v: the records of a response's data.
func objects(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n++
		for _, e := range v {
			n += objects(e)
		}
	case []any:
		for _, e := range v {
			n += objects(e)
		}
	}
	return n
}

// checkCost draws a document from data, sends it and checks the property.
func checkCost(t *testing.T, fs *server, st *countingStore, data []byte) {
	s := *fs
	s.tb = t // not the fuzz target's F
	g := &docGen{data: data}
	fields := g.set("Query", 0)
	var b strings.Builder
	b.WriteString("{")
	render(&b, fields)
	b.WriteString(" }")
	query := b.String()
	cost := complexityOfFields(fields)
	bound, limited := rowBound(fields, "Query")

	before := st.records.Load()
	r := s.post(s.admin, query, nil)
	read := st.records.Load() - before
	if refused := r.code() == "COMPLEXITY_LIMIT_EXCEEDED"; refused != (cost > 1000) {
		t.Fatalf("%s\ncomplexity %d: refused %v (%+v)", query, cost, refused, r.Errors)
	}
	if cost > 1000 {
		return
	}
	if read > costMaxRecords {
		t.Fatalf("%s\nread %d records, more than %d", query, read, costMaxRecords)
	}
	if len(r.raw) > costMaxBytes {
		t.Fatalf("%s\nanswered %d bytes, more than %d", query, len(r.raw), costMaxBytes)
	}
	switch r.code() {
	case "RECORD_LIMIT_EXCEEDED", "RESPONSE_TOO_LARGE":
		if string(r.Data) != "null" || len(r.Errors) != 1 {
			t.Fatalf("%s\nstopped with data %.200s and %d errors", query, r.Data, len(r.Errors))
		}
		return
	}
	var v any
	if err := json.Unmarshal(r.Data, &v); err != nil {
		t.Fatalf("%s\ndata %.200s: %v", query, r.Data, err)
	}
	returned := objects(v) - 1 // the data object itself
	if returned > bound {
		t.Fatalf("%s\nreturned %d records, more than its bound %d", query, returned, bound)
	}
	if limited && returned > cost {
		t.Fatalf("%s\nevery list limited: returned %d records, more than its complexity %d", query, returned, cost)
	}
}

func FuzzCostModel(f *testing.F) {
	s, st := costServer(f)
	for _, seed := range []string{
		"\x00",
		"\x01\x01\x00\x00\x00", // users { id }
		"\x02\x01\x00\x01\x04\x00\x04\x00\x02\x00", // users with posts
		"\x00\x03\x00\x02\x00\x04\x04\x00\x01",
		"\x02\x03\x06\x00\x02\x04\x06\x00\x02\x04\x01\x00\x00",
		"\x02\x01\x00\x00\x04\x00\x00\x04\x00\x00\x04\x00\x00\x00",
		"\x02\x01\x06\x00\x02\x04\x06\x00\x02\x04\x06\x00\x02\x04\x06\x00",
		strings.Repeat("\x02\x01\x00\x00\x04", 20),
		strings.Repeat("\x05\x03\x06\x01\x04\x02", 30),
		strings.Repeat("\xff\x7f\x13\x42", 40),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkCost(t, s, st, data) })
}

func TestCostModelProperty(t *testing.T) {
	s, st := costServer(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		data := make([]byte, 8+rng.IntN(120))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		checkCost(t, s, st, data)
	}
}
