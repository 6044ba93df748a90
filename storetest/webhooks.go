package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// testWebhooks checks the webhook endpoints and deliveries of a store that
// keeps them (resourceapi.WebhookStore): endpoints are created, read,
// changed and deleted; each committed event is fanned out once to the
// enabled endpoints; deliveries are leased to one owner at a time, a
// record's in order, and taken again once a lease expires; an attempt is
// recorded only by the lease's owner; failing endpoints are disabled;
// deliveries are replayed and purged.
func testWebhooks(t *testing.T, open opener) {
	hooks := func(t *testing.T) (resourceapi.Store, resourceapi.WebhookStore) {
		t.Helper()
		s := open(t)
		ws, ok := s.(resourceapi.WebhookStore)
		if !ok {
			t.Skip("the store keeps no webhooks (resourceapi.WebhookStore)")
		}
		return s, ws
	}
	t.Run("Endpoints", func(t *testing.T) {
		_, ws := hooks(t)
		a := mustWebhook(t, ws, "https://a.example/hook", true, "users.*")
		if a.ID == 0 || a.Secret != "whsec_a" || a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) || !slices.Equal(a.Types, []string{"users.*"}) || !a.Enabled {
			t.Fatalf("CreateWebhook = %+v", a)
		}
		b := mustWebhook(t, ws, "https://b.example/hook", false, "*")
		got, err := ws.Webhook(timeout(t), a.ID)
		if err != nil || got.URL != a.URL || got.Secret != a.Secret || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("Webhook(%d) = %+v, %v; want %+v", a.ID, got, err, a)
		}
		list, err := ws.Webhooks(timeout(t), 10)
		if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
			t.Fatalf("Webhooks = %+v, %v; want a then b", list, err)
		}
		if list, err := ws.Webhooks(timeout(t), 1); err != nil || len(list) != 1 {
			t.Fatalf("Webhooks(1) = %d endpoints, %v; want 1", len(list), err)
		}

		until := resourceapi.Timestamp(time.Now().Add(time.Hour))
		up, err := ws.UpdateWebhook(timeout(t), a.ID, func(w *resourceapi.Webhook) error {
			w.PreviousSecret, w.PreviousUntil, w.Secret = w.Secret, until, "whsec_new"
			w.Types = []string{"orders.created", "posts.*"}
			return nil
		})
		if err != nil || up.Secret != "whsec_new" || up.PreviousSecret != "whsec_a" || !up.PreviousUntil.Equal(until) ||
			!slices.Equal(up.Types, []string{"orders.created", "posts.*"}) || !up.CreatedAt.Equal(a.CreatedAt) || up.UpdatedAt.Before(a.UpdatedAt) {
			t.Fatalf("UpdateWebhook = %+v, %v", up, err)
		}
		refused := errors.New("refused")
		if _, err := ws.UpdateWebhook(timeout(t), a.ID, func(w *resourceapi.Webhook) error { w.URL = "x"; return refused }); err != refused {
			t.Fatalf("UpdateWebhook whose change fails = %v, want that error as is", err)
		}
		if got, _ := ws.Webhook(timeout(t), a.ID); got.URL != a.URL {
			t.Fatalf("a failed update changed the URL to %q", got.URL)
		}
		for name, err := range map[string]error{
			"Webhook": func() error { _, err := ws.Webhook(timeout(t), 999); return err }(),
			"UpdateWebhook": func() error {
				_, err := ws.UpdateWebhook(timeout(t), 999, func(*resourceapi.Webhook) error { return nil })
				return err
			}(),
			"DeleteWebhook":     ws.DeleteWebhook(timeout(t), 999),
			"WebhookDeliveries": func() error { _, err := ws.WebhookDeliveries(timeout(t), 999, 0, 10); return err }(),
			"Replay": func() error {
				_, err := ws.ReplayWebhookDeliveries(timeout(t), 999, 1, time.Time{}, time.Time{}, 10)
				return err
			}(),
		} {
			if code := resourceapi.ErrorCode(err); code != resourceapi.CodeNotFound {
				t.Errorf("%s of a missing endpoint: %v (code %s), want %s", name, err, code, resourceapi.CodeNotFound)
			}
		}
		if err := ws.DeleteWebhook(timeout(t), b.ID); err != nil {
			t.Fatalf("DeleteWebhook: %v", err)
		}
		if _, err := ws.Webhook(timeout(t), b.ID); resourceapi.ErrorCode(err) != resourceapi.CodeNotFound {
			t.Fatalf("Webhook after delete: %v, want not found", err)
		}
	})

	t.Run("Deliveries", func(t *testing.T) {
		s, ws := hooks(t)
		// Events before any endpoint go nowhere: the first endpoint
		// receives the events after it.
		mustCreate(t, s, user("Early", "early@example.com"))
		nothing := func([]resourceapi.Webhook, []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
			t.Error("fan called without an enabled endpoint")
			return nil, nil
		}
		if n, err := ws.FanOutWebhookEvents(timeout(t), 100, nothing); err != nil || n != 0 {
			t.Fatalf("FanOutWebhookEvents without endpoints = %d, %v; want 0", n, err)
		}
		off := mustWebhook(t, ws, "https://off.example/hook", false, "*")
		if n, err := ws.FanOutWebhookEvents(timeout(t), 100, nothing); err != nil || n != 0 {
			t.Fatalf("FanOutWebhookEvents with a disabled endpoint = %d, %v; want 0", n, err)
		}
		on := mustWebhook(t, ws, "https://on.example/hook", true, "*")
		ann := mustCreate(t, s, user("Ann", "ann@example.com"))
		mustUpdate(t, s, ann.ID(), resourceapi.Record{"name": "Anne"})
		mustCreate(t, s, user("Bob", "bob@example.com"))

		fan := func(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
			var out []resourceapi.WebhookDelivery
			for _, h := range hooks {
				if h.ID == off.ID {
					t.Errorf("fan given the disabled endpoint")
				}
				for _, ev := range events {
					out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name,
						MessageID: fmt.Sprintf("evt_%d", ev.ID), RecordKey: fmt.Sprintf("%s/%d", ev.Resource, ev.Record.ID()), Body: []byte(`{"n":1}`)})
				}
			}
			return out, nil
		}
		if n, err := ws.FanOutWebhookEvents(timeout(t), 2, fan); err != nil || n != 2 {
			t.Fatalf("FanOutWebhookEvents(2) = %d, %v; want 2", n, err)
		}
		if n, err := ws.FanOutWebhookEvents(timeout(t), 100, fan); err != nil || n != 1 {
			t.Fatalf("FanOutWebhookEvents = %d, %v; want the 1 left", n, err)
		}
		if n, err := ws.FanOutWebhookEvents(timeout(t), 100, fan); err != nil || n != 0 {
			t.Fatalf("FanOutWebhookEvents again = %d, %v; want 0: each event once", n, err)
		}
		log := mustDeliveries(t, ws, on.ID, 0, 10)
		if len(log) != 3 || log[0].EventType != "users.created" || log[1].EventType != "users.updated" || log[2].EventType != "users.created" ||
			log[0].ID < log[1].ID || log[0].State != resourceapi.DeliveryPending || string(log[0].Body) != `{"n":1}` {
			t.Fatalf("deliveries = %+v; want Bob's create, Ann's update and create, newest first, pending", log)
		}
		if page := mustDeliveries(t, ws, on.ID, log[0].ID, 10); len(page) != 2 || page[0].ID != log[1].ID {
			t.Fatalf("deliveries before %d = %+v", log[0].ID, page)
		}
		annCreate, annUpdate, bobCreate := log[2], log[1], log[0]

		// Ann's update waits for her create: one delivery of each record.
		now := log[0].CreatedAt.Add(time.Second)
		claimed := mustClaim(t, ws, "one", now, time.Minute, 10)
		if ids := deliveryIDs(claimed); !slices.Equal(ids, []int64{annCreate.ID, bobCreate.ID}) {
			t.Fatalf("claimed %v, want %v (Ann's create and Bob's, not Ann's update)", ids, []int64{annCreate.ID, bobCreate.ID})
		}
		if again := mustClaim(t, ws, "two", now, time.Minute, 10); len(again) != 0 {
			t.Fatalf("another owner claimed %v while they are leased", deliveryIDs(again))
		}
		// An attempt by one who does not hold the lease records nothing.
		if err := ws.FinishWebhookDeliveries(timeout(t), []resourceapi.WebhookAttempt{{DeliveryID: annCreate.ID, Owner: "two", At: now,
			Status: 200, State: resourceapi.DeliveryDelivered}}); err != nil {
			t.Fatal(err)
		}
		if d := mustDelivery(t, ws, on.ID, annCreate.ID); d.State != resourceapi.DeliveryPending || d.Attempts != 0 {
			t.Fatalf("after another's attempt: %+v, want pending, untouched", d)
		}
		// Ann's create succeeds: her update is next.
		mustFinish(t, ws, resourceapi.WebhookAttempt{DeliveryID: annCreate.ID, Owner: "one", At: now, Status: 204,
			Latency: 12 * time.Millisecond, Response: "ok", State: resourceapi.DeliveryDelivered})
		d := mustDelivery(t, ws, on.ID, annCreate.ID)
		if d.State != resourceapi.DeliveryDelivered || d.Attempts != 1 || d.LastStatus != 204 || d.LastLatency != 12*time.Millisecond ||
			d.LastResponse != "ok" || !d.DeliveredAt.Equal(resourceapi.Timestamp(now)) || !d.FirstAttemptAt.Equal(resourceapi.Timestamp(now)) {
			t.Fatalf("delivered: %+v", d)
		}
		// Bob's fails: retried at next, the endpoint failing since now.
		next := now.Add(5 * time.Second)
		mustFinish(t, ws, resourceapi.WebhookAttempt{DeliveryID: bobCreate.ID, Owner: "one", At: now, Status: 500, Response: "boom",
			State: resourceapi.DeliveryPending, Next: next})
		if d := mustDelivery(t, ws, on.ID, bobCreate.ID); d.State != resourceapi.DeliveryPending || d.Attempts != 1 || !d.NextAttemptAt.Equal(resourceapi.Timestamp(next)) {
			t.Fatalf("failed once: %+v", d)
		}
		if w, _ := ws.Webhook(timeout(t), on.ID); !w.FailingSince.Equal(resourceapi.Timestamp(now)) {
			t.Fatalf("FailingSince = %v, want %v", w.FailingSince, now)
		}
		if ids := deliveryIDs(mustClaim(t, ws, "two", now, time.Minute, 10)); !slices.Equal(ids, []int64{annUpdate.ID}) {
			t.Fatalf("claimed %v, want Ann's update only (Bob's is not due)", ids)
		}
		// A lease that expires goes to another owner.
		if ids := deliveryIDs(mustClaim(t, ws, "three", now.Add(2*time.Minute), time.Minute, 10)); !slices.Equal(ids, []int64{annUpdate.ID, bobCreate.ID}) {
			t.Fatalf("claimed after the lease expired: %v, want %v", ids, []int64{annUpdate.ID, bobCreate.ID})
		}
		mustFinish(t, ws, resourceapi.WebhookAttempt{DeliveryID: bobCreate.ID, Owner: "three", At: now.Add(2 * time.Minute), Status: 0,
			Response: "timed out", State: resourceapi.DeliveryDead})
		if d := mustDelivery(t, ws, on.ID, bobCreate.ID); d.State != resourceapi.DeliveryDead || d.Attempts != 2 || !d.FirstAttemptAt.Equal(resourceapi.Timestamp(now)) {
			t.Fatalf("dead-lettered: %+v", d)
		}

		// Failing since now: disabled by a cutoff after it, not before.
		if got, err := ws.DisableFailingWebhooks(timeout(t), now, "failing"); err != nil || len(got) != 0 {
			t.Fatalf("DisableFailingWebhooks(now) = %+v, %v; want none", got, err)
		}
		got, err := ws.DisableFailingWebhooks(timeout(t), now.Add(time.Millisecond), "failing for a day")
		if err != nil || len(got) != 1 || got[0].ID != on.ID || got[0].Enabled || got[0].DisabledReason != "failing for a day" {
			t.Fatalf("DisableFailingWebhooks = %+v, %v; want the endpoint, disabled", got, err)
		}
		// A disabled endpoint's deliveries are not claimed.
		replayed, err := ws.ReplayWebhookDeliveries(timeout(t), on.ID, annCreate.ID, time.Time{}, time.Time{}, 10)
		if err != nil || len(replayed) != 1 || replayed[0].ReplayOf != annCreate.ID || replayed[0].MessageID != annCreate.MessageID ||
			replayed[0].State != resourceapi.DeliveryPending || replayed[0].Attempts != 0 || replayed[0].ID <= bobCreate.ID {
			t.Fatalf("replay of one = %+v, %v", replayed, err)
		}
		later := replayed[0].CreatedAt.Add(10 * time.Minute)
		if c := mustClaim(t, ws, "one", later, time.Minute, 10); len(c) != 0 {
			t.Fatalf("claimed %v of a disabled endpoint", deliveryIDs(c))
		}
		if _, err := ws.UpdateWebhook(timeout(t), on.ID, func(w *resourceapi.Webhook) error { w.Enabled = true; return nil }); err != nil {
			t.Fatal(err)
		}
		if ids := deliveryIDs(mustClaim(t, ws, "one", later, time.Minute, 10)); !slices.Equal(ids, []int64{annUpdate.ID}) {
			t.Fatalf("claimed %v, want Ann's update (her replayed create waits behind it)", ids)
		}
		if _, err := ws.ReplayWebhookDeliveries(timeout(t), on.ID, 99999, time.Time{}, time.Time{}, 10); resourceapi.ErrorCode(err) != resourceapi.CodeNotFound {
			t.Fatalf("replay of a missing delivery: %v, want not found", err)
		}
		// A range: every delivery created in it, at most limit.
		from, to := annCreate.CreatedAt, bobCreate.CreatedAt.Add(time.Millisecond)
		if r, err := ws.ReplayWebhookDeliveries(timeout(t), on.ID, 0, from, to, 2); err != nil || len(r) != 2 || r[0].ReplayOf != annCreate.ID {
			t.Fatalf("replay of a range, limit 2 = %+v, %v", r, err)
		}
		if r, err := ws.ReplayWebhookDeliveries(timeout(t), on.ID, 0, to.Add(time.Hour), to.Add(2*time.Hour), 10); err != nil || len(r) != 0 {
			t.Fatalf("replay of an empty range = %+v, %v", r, err)
		}

		// Purge: delivered and dead ones, never pending ones.
		n, err := ws.PurgeWebhookDeliveries(timeout(t), later.Add(time.Hour), 100)
		if err != nil || n != 2 {
			t.Fatalf("PurgeWebhookDeliveries = %d, %v; want 2 (Ann's delivered create, Bob's dead one)", n, err)
		}
		for _, d := range mustDeliveries(t, ws, on.ID, 0, 100) {
			if d.State != resourceapi.DeliveryPending {
				t.Fatalf("after the purge: %+v", d)
			}
		}
		// Deleting the endpoint deletes its deliveries.
		if err := ws.DeleteWebhook(timeout(t), on.ID); err != nil {
			t.Fatal(err)
		}
		if c := mustClaim(t, ws, "one", later.Add(time.Hour), time.Minute, 10); len(c) != 0 {
			t.Fatalf("claimed %v of a deleted endpoint", deliveryIDs(c))
		}
	})

	t.Run("Attempts", func(t *testing.T) {
		s, ws := hooks(t)
		a := mustWebhook(t, ws, "https://a.example/hook", true, "*")
		b := mustWebhook(t, ws, "https://b.example/hook", true, "*")
		mustCreate(t, s, user("Cy", "cy@example.com"))
		mustCreate(t, s, user("Di", "di@example.com"))
		fan := func(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
			var out []resourceapi.WebhookDelivery
			for _, h := range hooks {
				for _, ev := range events {
					out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name,
						MessageID: fmt.Sprintf("evt_%d", ev.ID), RecordKey: fmt.Sprintf("%s/%d", ev.Resource, ev.Record.ID()), Body: []byte(`{}`)})
				}
			}
			return out, nil
		}
		if n, err := ws.FanOutWebhookEvents(timeout(t), 100, fan); err != nil || n != 2 {
			t.Fatalf("FanOutWebhookEvents = %d, %v; want 2", n, err)
		}
		la, lb := mustDeliveries(t, ws, a.ID, 0, 10), mustDeliveries(t, ws, b.ID, 0, 10)
		if len(la) != 2 || len(lb) != 2 || len(la[0].History) != 0 {
			t.Fatalf("deliveries: a %+v, b %+v; want 2 each, unattempted", la, lb)
		}
		aCy, aDi, bCy, bDi := la[1], la[0], lb[1], lb[0]

		// Each endpoint's share: one of a's, two of b's, in one claim.
		now := aDi.CreatedAt.Add(time.Second)
		room := map[int64]int{a.ID: 1, b.ID: 2}
		claimed, err := ws.ClaimWebhookDeliveries(timeout(t), "one", now, time.Minute, func(id int64) int { return room[id] })
		if ids := deliveryIDs(claimed); err != nil || !slices.Equal(ids, []int64{aCy.ID, bCy.ID, bDi.ID}) {
			t.Fatalf("claimed %v, %v; want %v (a's share: 1, b's: 2)", ids, err, []int64{aCy.ID, bCy.ID, bDi.ID})
		}

		// One batch: a's Cy fails; b's Cy succeeds, then its Di fails; an
		// attempt of a delivery the owner does not hold is not kept.
		mustFinish(t, ws,
			resourceapi.WebhookAttempt{DeliveryID: bDi.ID, Owner: "one", At: now.Add(time.Millisecond), Status: 502, Latency: 7 * time.Millisecond,
				Response: "bad gateway", State: resourceapi.DeliveryPending, Next: now.Add(time.Hour)},
			resourceapi.WebhookAttempt{DeliveryID: aCy.ID, Owner: "one", At: now, Status: 500, Latency: 3 * time.Millisecond, Response: "boom",
				State: resourceapi.DeliveryPending, Next: now.Add(5 * time.Second)},
			resourceapi.WebhookAttempt{DeliveryID: bCy.ID, Owner: "one", At: now, Status: 204, Latency: time.Millisecond, State: resourceapi.DeliveryDelivered},
			resourceapi.WebhookAttempt{DeliveryID: aDi.ID, Owner: "one", At: now, Status: 204, State: resourceapi.DeliveryDelivered})
		if d := mustDelivery(t, ws, a.ID, aDi.ID); d.Attempts != 0 || len(d.History) != 0 || d.State != resourceapi.DeliveryPending {
			t.Fatalf("a's Di, not held: %+v; want untouched", d)
		}
		d := mustDelivery(t, ws, a.ID, aCy.ID)
		want := resourceapi.WebhookAttempt{DeliveryID: aCy.ID, At: resourceapi.Timestamp(now), Status: 500, Latency: 3 * time.Millisecond,
			Response: "boom", State: resourceapi.DeliveryPending}
		if d.Attempts != 1 || len(d.History) != 1 || !sameAttempt(d.History[0], want) {
			t.Fatalf("a's Cy: %d attempts, history %+v; want [%+v]", d.Attempts, d.History, want)
		}
		if w, _ := ws.Webhook(timeout(t), a.ID); !w.FailingSince.Equal(resourceapi.Timestamp(now)) {
			t.Fatalf("a failing since %v, want %v", w.FailingSince, now)
		}
		if w, _ := ws.Webhook(timeout(t), b.ID); !w.FailingSince.Equal(resourceapi.Timestamp(now.Add(time.Millisecond))) {
			t.Fatalf("b failing since %v, want %v (its failure after its success)", w.FailingSince, now.Add(time.Millisecond))
		}
		checkAttemptsKept(t, ws, 3)

		// a's Cy succeeds at its retry, with a's Di: both kept, in order.
		later := now.Add(10 * time.Second)
		if ids := deliveryIDs(mustClaim(t, ws, "one", later, time.Minute, 10)); !slices.Equal(ids, []int64{aCy.ID, aDi.ID}) {
			t.Fatalf("claimed %v, want a's Cy and Di (b's Di waits an hour)", ids)
		}
		mustFinish(t, ws,
			resourceapi.WebhookAttempt{DeliveryID: aCy.ID, Owner: "one", At: later, Status: 200, Latency: 2 * time.Millisecond, Response: "ok",
				State: resourceapi.DeliveryDelivered},
			resourceapi.WebhookAttempt{DeliveryID: aDi.ID, Owner: "one", At: later, Status: 200, State: resourceapi.DeliveryDelivered})
		d = mustDelivery(t, ws, a.ID, aCy.ID)
		second := resourceapi.WebhookAttempt{DeliveryID: aCy.ID, At: resourceapi.Timestamp(later), Status: 200, Latency: 2 * time.Millisecond,
			Response: "ok", State: resourceapi.DeliveryDelivered}
		if d.Attempts != 2 || len(d.History) != 2 || !sameAttempt(d.History[0], want) || !sameAttempt(d.History[1], second) {
			t.Fatalf("a's Cy: %d attempts, history %+v; want [%+v %+v]", d.Attempts, d.History, want, second)
		}
		if w, _ := ws.Webhook(timeout(t), a.ID); !w.FailingSince.IsZero() {
			t.Fatalf("a failing since %v after its success, want never", w.FailingSince)
		}
		checkAttemptsKept(t, ws, 5)

		// Purged with their deliveries: b's Di, pending, keeps its one.
		if n, err := ws.PurgeWebhookDeliveries(timeout(t), later.Add(time.Hour), 100); err != nil || n != 3 {
			t.Fatalf("PurgeWebhookDeliveries = %d, %v; want 3", n, err)
		}
		if d := mustDelivery(t, ws, b.ID, bDi.ID); len(d.History) != 1 || d.History[0].Status != 502 || d.History[0].Response != "bad gateway" {
			t.Fatalf("b's Di after the purge: history %+v", d.History)
		}
		checkAttemptsKept(t, ws, 1)
		// And with their endpoint.
		if err := ws.DeleteWebhook(timeout(t), b.ID); err != nil {
			t.Fatal(err)
		}
		checkAttemptsKept(t, ws, 0)
	})

	t.Run("Round", func(t *testing.T) {
		s, ws := hooks(t)
		a := mustWebhook(t, ws, "https://a.example/hook", true, "*")
		cy := mustCreate(t, s, user("Cy", "cy@example.com"))
		mustUpdate(t, s, cy.ID(), resourceapi.Record{"name": "Cyd"})
		fan := FanToFirst
		room := func(int64) int { return 10 }
		// One round fans out both events and claims, in the same
		// transaction, the delivery it just made that may go: Cy's
		// creation (its update waits for it).
		res, err := ws.RunWebhookRound(timeout(t), resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute})
		if err != nil || !res.Wrote || res.FannedOut != 2 || len(res.Claimed) != 1 || res.Claimed[0].EventType != "users.created" {
			t.Fatalf("round = %+v, %v; want both events fanned out, the creation's delivery claimed", res, err)
		}
		created := res.Claimed[0]
		// The next records its attempt and claims the update in the same
		// transaction.
		at := time.Now()
		res, err = ws.RunWebhookRound(timeout(t), resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: at, Lease: time.Minute,
			Attempts: []resourceapi.WebhookAttempt{{DeliveryID: created.ID, Owner: "one", At: at, Status: 204, State: resourceapi.DeliveryDelivered}}})
		if err != nil || !res.Wrote || res.FannedOut != 0 || len(res.Claimed) != 1 || res.Claimed[0].EventType != "users.updated" {
			t.Fatalf("round = %+v, %v; want the update's delivery claimed", res, err)
		}
		if d := mustDelivery(t, ws, a.ID, created.ID); d.State != resourceapi.DeliveryDelivered || len(d.History) != 1 {
			t.Fatalf("the creation's delivery %+v; want delivered, its attempt kept", d)
		}
		// Nothing to record, fan out or claim: nothing written.
		res, err = ws.RunWebhookRound(timeout(t), resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute})
		if err != nil || res.Wrote || res.FannedOut != 0 || len(res.Claimed) != 0 {
			t.Fatalf("idle round = %+v, %v; want nothing written", res, err)
		}
	})
}

// sameAttempt compares the attempts as the log keeps them.
// FanToFirst is a WebhookRound.Fan for tests: one delivery of each event
// to the first of the endpoints, with an empty body.
func FanToFirst(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
	var out []resourceapi.WebhookDelivery
	for _, ev := range events {
		out = append(out, resourceapi.WebhookDelivery{WebhookID: hooks[0].ID, EventID: ev.ID, EventType: ev.Name,
			MessageID: fmt.Sprintf("evt_%d", ev.ID), RecordKey: fmt.Sprintf("%s/%d", ev.Resource, ev.Record.ID()), Body: []byte(`{}`)})
	}
	return out, nil
}

func sameAttempt(got, want resourceapi.WebhookAttempt) bool {
	return got.DeliveryID == want.DeliveryID && got.At.Equal(want.At) && got.Status == want.Status && got.Latency == want.Latency &&
		got.Response == want.Response && got.State == want.State
}

func mustWebhook(tb testing.TB, ws resourceapi.WebhookStore, url string, enabled bool, types ...string) resourceapi.Webhook {
	tb.Helper()
	secret := "whsec_a"
	w, err := ws.CreateWebhook(timeout(tb), resourceapi.Webhook{URL: url, Types: types, Enabled: enabled, Secret: secret})
	if err != nil {
		tb.Fatalf("CreateWebhook: %v", err)
	}
	return w
}

func mustDeliveries(tb testing.TB, ws resourceapi.WebhookStore, id, before int64, limit int) []resourceapi.WebhookDelivery {
	tb.Helper()
	out, err := ws.WebhookDeliveries(timeout(tb), id, before, limit)
	if err != nil {
		tb.Fatalf("WebhookDeliveries: %v", err)
	}
	return out
}

func mustDelivery(tb testing.TB, ws resourceapi.WebhookStore, hook, id int64) resourceapi.WebhookDelivery {
	tb.Helper()
	for _, d := range mustDeliveries(tb, ws, hook, 0, 1000) {
		if d.ID == id {
			return d
		}
	}
	tb.Fatalf("no delivery %d", id)
	return resourceapi.WebhookDelivery{}
}

func mustClaim(tb testing.TB, ws resourceapi.WebhookStore, owner string, now time.Time, lease time.Duration, limit int) []resourceapi.WebhookDelivery {
	tb.Helper()
	out, err := ws.ClaimWebhookDeliveries(timeout(tb), owner, now, lease, func(int64) int { return limit })
	if err != nil {
		tb.Fatalf("ClaimWebhookDeliveries: %v", err)
	}
	return out
}

func mustFinish(tb testing.TB, ws resourceapi.WebhookStore, a ...resourceapi.WebhookAttempt) {
	tb.Helper()
	if err := ws.FinishWebhookDeliveries(timeout(tb), a); err != nil {
		tb.Fatalf("FinishWebhookDeliveries: %v", err)
	}
}

// attemptsKept is a store that says how many attempts its delivery log
// keeps (sqlstore.Store): the attempts of purged deliveries must go.
type attemptsKept interface {
	WebhookAttemptsKept(ctx context.Context) (int64, error)
}

// checkAttemptsKept checks that ws keeps want attempts, when it says.
func checkAttemptsKept(tb testing.TB, ws resourceapi.WebhookStore, want int64) {
	tb.Helper()
	k, ok := ws.(attemptsKept)
	if !ok {
		return
	}
	if n, err := k.WebhookAttemptsKept(timeout(tb)); err != nil || n != want {
		tb.Fatalf("WebhookAttemptsKept = %d, %v; want %d", n, err, want)
	}
}

func deliveryIDs(ds []resourceapi.WebhookDelivery) []int64 {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}
