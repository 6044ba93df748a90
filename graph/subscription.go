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

// subscribe delivers the events named name (a type, "comments.created", or
// an alias, "userCreated"), about records of res, as GraphQL values. The
// caller must be allowed to read the records of res (the rule layer's
// Authorize), checked when the subscription starts and confirmed before each
// delivery (Service.Confirm, see wsConn.confirm), and receives only the
// events the rule layer lets them see (Service.EventFor, in wsConn.next: the
// records they may read by id, their own only where records are private).
//
// The hub's delivery queues each event on the connection (wsSub.ready),
// never blocking and never dropping one: no count of events bounds a
// subscriber, pace.go says what bounds memory. No goroutine waits on the
// stream: the writer that sends the connection's events hands each value to
// the operation's stream (feed) just before it renders it.
func subscribe[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, conv func(resourceapi.Record) T) (<-chan T, error) {
	return listen(ctx, h, res, name, false, conv)
}

// subscribeEach is subscribe for a caller who may read only some records
// of res (their own orders): the subscription starts when the caller may
// read any (Service.AuthorizeEvents), each batch confirms the caller's
// credential alone (Service.ConfirmSession), and each event goes to the
// caller only if they may read its record (Service.EventFor). The
// subscriptions generated from the declarations use it.
func subscribeEach[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, conv func(resourceapi.Record) T) (<-chan T, error) {
	return listen(ctx, h, res, name, true, conv)
}

func listen[T any](ctx context.Context, h *Handler, res *resourceapi.Resource, name string, each bool, conv func(resourceapi.Record) T) (<-chan T, error) {
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
		if each {
			if err = h.cfg.Service.ConfirmSession(ctx, sess, time.Now()); err == nil {
				err = h.cfg.Service.AuthorizeEvents(ctx, sess.Caller(), res)
			}
		} else {
			err = h.cfg.Service.Confirm(ctx, sess, time.Now(), res)
		}
		switch resourceapi.ErrorCode(err) {
		case resourceapi.CodeInvalidToken, resourceapi.CodeUnauthenticated:
			sub.c.closeWith(closeForbidden, "Forbidden: the credential is no longer valid")
		}
	} else if each {
		err = h.cfg.Service.AuthorizeEvents(ctx, c, res)
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
	out := make(chan T, 1)
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
	sub.each = each
	sub.feed = func(v any) {
		select { // empty, unless a stream that ended left its last value
		case <-out:
		default:
		}
		out <- v.(T)
	}
	sub.end = func() { close(out) }
	sub.c.mu.Unlock()
	return out, nil
}
