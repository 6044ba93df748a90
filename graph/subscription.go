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
// subscriber has a buffer of WebSocketOptions.Buffer events in the event hub;
// one that falls further behind is dropped by the hub, and then its
// connection is closed with 1008, so that a slow client never makes memory
// grow.
func subscribe[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, conv func(resourceapi.Record) *T) (<-chan *T, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.cfg.Service.Authorize(c, res, resourceapi.OpRead); err != nil {
		return nil, err
	}
	if h.cfg.Events == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "Subscriptions are not available")
	}
	conn := wsConnFrom(ctx)
	release, err := conn.acquire()
	if err != nil {
		return nil, err
	}
	in, err := h.cfg.Events.Subscribe(ctx, name, h.cfg.WebSocket.Buffer)
	if err != nil {
		release()
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "The service is shutting down")
	}
	out := make(chan *T)
	go func() {
		defer release()
		defer close(out)
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					if ctx.Err() == nil && conn != nil {
						conn.closeWith(closeTooSlow, "Subscriber fell behind; reconnect")
					}
					return
				}
				select {
				case out <- conv(ev.Record):
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
