package http

import (
	"context"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// bucket is a RateLimiter of one key whose budget the test sets.
type bucket struct{ left, limit int }

func (b *bucket) AllowN(_ context.Context, _ string, n int) (resourceapi.RateDecision, error) {
	d := resourceapi.RateDecision{Limit: b.limit, Reset: time.Now().Add(time.Duration(b.limit-b.left) * time.Second)}
	if n > b.left {
		d.Remaining = b.left
		return d, nil
	}
	b.left -= n
	d.Allowed, d.Remaining = true, b.left
	return d, nil
}

// What a caller owes beyond its budget is paid before its next request is
// served, and refuses requests while the budget cannot cover it.
func TestDebtsArePaidFirst(t *testing.T) {
	ctx := context.Background()
	var d debts
	b := &bucket{left: 3, limit: 10}
	d.add("user:1", 5)
	admitted, _ := b.AllowN(ctx, "user:1", 1) // 2 left
	dec := d.settle(ctx, b, "user:1", admitted)
	if dec.Allowed || dec.RetryAfter < time.Second {
		t.Fatalf("a debt of 5 with 2 left: %+v, want refused with a Retry-After", dec)
	}
	if b.left != 0 {
		t.Errorf("%d left, want the debt paid from all of it", b.left)
	}
	b.left = 5                               // refilled
	admitted, _ = b.AllowN(ctx, "user:1", 1) // 4 left
	if dec := d.settle(ctx, b, "user:1", admitted); !dec.Allowed || dec.Remaining != 1 || b.left != 1 {
		t.Fatalf("the rest of the debt (3) with 4 left: %+v, %d left; want allowed with 1 left", dec, b.left)
	}
	admitted, _ = b.AllowN(ctx, "user:1", 1)
	if dec := d.settle(ctx, b, "user:1", admitted); !dec.Allowed || b.left != 0 {
		t.Fatalf("nothing owed: %+v, %d left; want the request alone taken", dec, b.left)
	}
	if len(d.m) != 0 {
		t.Errorf("paid debts still kept: %v", d.m)
	}
}
