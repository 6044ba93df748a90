package sqlstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
)

// TestItemReferenceDetails writes orders whose items name products that do
// not exist (deleted after the rule layer looked them up): CodeUnprocessable
// with a detail for each such item's field, as for a record's own
// references, on create and on update, and nothing written. The store used
// to refuse them with no detail, so a client could not tell which item was
// wrong.
func TestItemReferenceDetails(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, filepath.Join(t.TempDir(), "test.db"), sqlite.Options{})
	user := mustCreate(t, db, "Ann", "ann@example.com").ID()
	product := resourceapi.Record{"name": "Engine", "price_cents": int64(100)}
	if err := resourceapi.Validate(resourceapi.Products, product, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	p, err := db.Create(ctx, resourceapi.Products, product)
	if err != nil {
		t.Fatal(err)
	}
	order := func(products ...int64) resourceapi.Record {
		t.Helper()
		var items []resourceapi.Record
		for _, id := range products {
			items = append(items, resourceapi.Record{"product_id": id, "quantity": int64(1)})
		}
		rec := resourceapi.Record{"user_id": user, "items": items}
		if err := resourceapi.Validate(resourceapi.Orders, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		for _, item := range rec["items"].([]resourceapi.Record) {
			item["unit_price_cents"] = int64(100) // as looked up before the product went
		}
		resourceapi.Orders.Compute(rec)
		return rec
	}
	refused := func(what string, err error, want ...string) {
		t.Helper()
		e := resourceapi.ErrorOf(err)
		var fields []string
		for _, d := range e.Details {
			fields = append(fields, d.Field)
		}
		if e.Code != resourceapi.CodeUnprocessable || !slices.Equal(fields, want) {
			t.Fatalf("%s = %v (details for %v), want %s with details for %v", what, err, fields, resourceapi.CodeUnprocessable, want)
		}
	}
	const absent = 424242
	_, err = db.Create(ctx, resourceapi.Orders, order(p.ID(), absent, p.ID(), absent+1))
	refused("Create", err, "items[1].product_id", "items[3].product_id")

	o, err := db.Create(ctx, resourceapi.Orders, order(p.ID()))
	if err != nil {
		t.Fatal(err)
	}
	patch := order(absent)
	delete(patch, "user_id")
	_, err = db.Update(ctx, resourceapi.Orders, o.ID(), patch, nil)
	refused("Update", err, "items[0].product_id")
	got, err := db.Get(ctx, resourceapi.Orders, o.ID())
	if err != nil || len(got["items"].([]resourceapi.Record)) != 1 || got["items"].([]resourceapi.Record)[0]["product_id"] != p.ID() {
		t.Fatalf("order after a refused update = %v, %v; want it unchanged", got, err)
	}
}
