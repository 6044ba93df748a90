package main

import (
	"context"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/relay"
)

// events is one instance's share of the events (docs/events.md): the hub
// that this instance's subscriptions read, the relay that publishes the
// outbox, and, on PostgreSQL with Redis, the follower that brings every
// instance's events into the hub.
type events struct {
	// hub is what subscriptions read: resourceapi.Events.
	hub       *inmem.Hub
	stopRelay context.CancelFunc
	relayDone chan struct{}
	follower  *redis.Follower // nil without Redis
	relay     *relay.Relay    // nil when the relay is off
}

// startEvents starts the event engine the configuration calls for:
//
//   - SQLite: one instance serves the file; the relay publishes into its
//     hub (and finds the commands' events by polling).
//   - PostgreSQL with RESOURCEAPI_REDIS_URL: the relay publishes into a
//     Redis stream that every instance follows into its hub.
//   - PostgreSQL without Redis: as SQLite, in this process, which serves
//     one instance: with several, a subscriber would hear only the events
//     its own instance's relay happened to publish, so it says so.
//
// rdb is the Redis client (nil without RESOURCEAPI_REDIS_URL).
//
// trace, when not nil, traces each batch the relay publishes.
func startEvents(ctx context.Context, cfg config, outbox resourceapi.Outbox, rdb *goredis.Client, log *slog.Logger,
	trace func(context.Context, int) (context.Context, func(error))) (*events, error) {
	ev := &events{hub: inmem.NewHub()}
	var publisher resourceapi.Publisher = ev.hub
	engine := "in-process"
	if cfg.postgres() && rdb != nil {
		stream := redis.NewStream(rdb, redis.StreamOptions{Key: cfg.EventsStream, MaxLen: cfg.EventsStreamLength, Logger: log})
		f, err := stream.Follow(ctx, ev.hub)
		if err != nil {
			return nil, err
		}
		ev.follower, publisher, engine = f, stream, "redis"
	} else if cfg.postgres() {
		log.Info("events: PostgreSQL without RESOURCEAPI_REDIS_URL: events are carried in this process only; " +
			"with several instances, set RESOURCEAPI_REDIS_URL so that every instance's subscribers hear every write")
	}
	if cfg.EventsRelay {
		relay := relay.New(outbox, publisher, relay.Config{
			Poll: cfg.EventsPoll, Retention: cfg.outboxRetention(), Logger: log, Trace: trace,
		})
		ev.relay = relay
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ev.stopRelay, ev.relayDone = cancel, make(chan struct{})
		go func() {
			defer close(ev.relayDone)
			relay.Run(rctx)
		}()
	}
	log.Info("events", "engine", engine, "relay", cfg.EventsRelay, "poll", cfg.EventsPoll.String(),
		"retention", cfg.outboxRetention().String())
	return ev, nil
}

// Close stops the relay, after a last round for the writes that committed
// during the shutdown, then the follower, and closes every subscription.
func (ev *events) Close() {
	if ev.stopRelay != nil {
		ev.stopRelay()
		<-ev.relayDone
	}
	if ev.follower != nil {
		ev.follower.Close()
	}
	ev.hub.Close()
}
