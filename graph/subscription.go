package graph

import (
	"context"

	"github.com/resourceapi/resourceapi"
)

func (r subscriptionResolver) UserCreated(ctx context.Context) (<-chan *User, error) {
	return subscribe(ctx, r.h, resourceapi.Users, "userCreated", userOf)
}

func (r subscriptionResolver) PostCreated(ctx context.Context) (<-chan *Post, error) {
	return subscribe(ctx, r.h, resourceapi.Posts, "postCreated", postOf)
}

// subscribe delivers the events named name, about records of res, as
// GraphQL values. The caller must be allowed to read every record of res
// (the rule layer's Authorize), checked when the subscription starts. Each
// subscription has a buffer of WebSocketOptions.Buffer events, which the
// hub's delivery fills without blocking; one that falls further behind is
// dropped by the hub, and then its connection is closed with 1008, so that
// a slow client never makes memory grow. No goroutine waits on the buffer:
// each event queues a response on the connection (wsSub.ready), whose
// writer reads it from the buffer.
func subscribe[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, conv func(resourceapi.Record) *T) (<-chan *T, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.cfg.Service.Authorize(ctx, c, res, resourceapi.OpRead); err != nil {
		return nil, err
	}
	sub := wsSubFrom(ctx)
	if sub == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Subscriptions are served over WebSocket")
	}
	if h.cfg.Events == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "Subscriptions are not available")
	}
	release, err := sub.c.acquire()
	if err != nil {
		return nil, err
	}
	out := make(chan *T, h.cfg.WebSocket.Buffer)
	dropped := false // only the hub's delivery and then ended touch it
	err = h.cfg.Events.Listen(ctx, name, func(ev resourceapi.Event) bool {
		select {
		case out <- converted(h, ev, conv):
			sub.ready(ev.ID)
			return true
		default:
			dropped = true
			return false
		}
	}, func() {
		release()
		close(out)
		switch {
		case ctx.Err() != nil: // the client or the connection ended it
		case dropped:
			sub.c.closeWith(closeTooSlow, "Subscriber fell behind; reconnect")
		default: // the service is shutting down: the stream ends
			sub.ready(0)
		}
	})
	if err != nil {
		release()
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "The service is shutting down")
	}
	sub.c.mu.Lock()
	sub.listening = true
	sub.skip = func() { <-out }
	sub.c.mu.Unlock()
	return out, nil
}

// convertedEvent is an event as the GraphQL value of its record.
type convertedEvent struct {
	id    int64
	value any
}

// converted returns conv(ev.Record), converted once for all the
// subscriptions the hub hands ev to, one after the other: they read the
// value, never change it.
func converted[T any](h *Handler, ev resourceapi.Event, conv func(resourceapi.Record) *T) *T {
	if last := h.converted.Load(); last != nil && last.id == ev.ID && ev.ID != 0 {
		if v, ok := last.value.(*T); ok {
			return v
		}
	}
	v := conv(ev.Record)
	h.converted.Store(&convertedEvent{id: ev.ID, value: v})
	return v
}
