package graph

import (
	"context"
	"time"

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
// (the rule layer's Authorize), checked when the subscription starts and
// confirmed before each delivery (Service.Confirm, see wsConn.confirm).
//
// The hub's delivery queues each event on the connection (wsSub.ready),
// never blocking and never dropping one: no count of events bounds a
// subscriber, pace.go says what bounds memory. No goroutine waits on the
// stream: the writer that sends the connection's events hands each value to
// the operation's stream (feed) just before it renders it.
func subscribe[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, conv func(resourceapi.Record) *T) (<-chan *T, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	sub := wsSubFrom(ctx)
	if sub == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Subscriptions are served over WebSocket")
	}
	if sess := sub.c.session; sess != nil {
		// As the caller is now, not as connection_init found it.
		err = h.cfg.Service.Confirm(ctx, sess, time.Now(), res)
		switch resourceapi.ErrorCode(err) {
		case resourceapi.CodeInvalidToken, resourceapi.CodeUnauthenticated:
			sub.c.closeWith(closeForbidden, "Forbidden: the credential is no longer valid")
		}
	} else {
		err = h.cfg.Service.Authorize(ctx, c, res, resourceapi.OpRead)
	}
	if err != nil {
		return nil, err
	}
	if h.cfg.Events == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "Subscriptions are not available")
	}
	release, err := sub.c.acquire()
	if err != nil {
		return nil, err
	}
	// One value at a time: the writer feeds it, and the operation's
	// responses read it at once.
	out := make(chan *T, 1)
	err = h.cfg.Events.Listen(ctx, name, func(ev resourceapi.Event) bool {
		return sub.ready(converted(h, ev, conv))
	}, func() {
		release()
		if ctx.Err() == nil { // the service is shutting down: the stream ends
			sub.ready(nil)
		}
	})
	if err != nil {
		release()
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "The service is shutting down")
	}
	sub.c.mu.Lock()
	sub.listening = true
	sub.res = res
	sub.feed = func(v any) {
		select { // empty, unless a stream that ended left its last value
		case <-out:
		default:
		}
		out <- v.(*T)
	}
	sub.end = func() { close(out) }
	sub.c.mu.Unlock()
	return out, nil
}
