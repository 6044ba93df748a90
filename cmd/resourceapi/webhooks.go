package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/webhook"
)

// webhookOptions are what the configuration lets deliveries reach.
func webhookOptions(cfg config) webhook.Options {
	return webhook.Options{AllowHTTP: cfg.WebhooksAllowHTTP, AllowPrivate: cfg.WebhooksAllowPrivate, Timeout: cfg.WebhooksTimeout}
}

// setWebhookPolicy gives the rule layer the configured URL check and
// rotation overlap.
func setWebhookPolicy(cfg config, service *resourceapi.Service) {
	opts := webhookOptions(cfg)
	service.SetWebhookPolicy(resourceapi.WebhookPolicy{
		CheckURL: func(u string) error { return webhook.CheckURL(u, opts) },
		Overlap:  cfg.WebhooksOverlap,
	})
}

// startWebhooks runs the delivery worker until ctx ends; the function it
// returns waits for it to stop (its attempts under way end within the
// timeout). With RESOURCEAPI_WEBHOOKS_DELIVER=false it runs none: the
// instance serves /api/webhooks and records events as before, and the
// instances with delivery on (PostgreSQL) fan them out and deliver them,
// or, where none runs (SQLite's one instance), they wait in the outbox.
func startWebhooks(ctx context.Context, cfg config, store any, service *resourceapi.Service, events resourceapi.Events, log *slog.Logger) func() {
	ws, ok := store.(resourceapi.WebhookStore)
	if !ok {
		return func() {}
	}
	if !cfg.WebhooksDeliver {
		logDeliveryOff(cfg, log)
		return func() {}
	}
	w := &webhook.Worker{
		Store:       ws,
		Service:     service,
		Client:      webhook.NewClient(webhookOptions(cfg)),
		Events:      events,
		Backoff:     webhook.Backoff{First: cfg.WebhooksBackoff, Max: cfg.WebhooksBackoffMax, Period: cfg.WebhooksRetryPeriod},
		Lease:       cfg.WebhooksLease,
		Concurrency: cfg.WebhooksConcurrency,
		Logger:      log,
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = w.Run(ctx)
	}()
	return func() { cancel(); wg.Wait() }
}

// logDeliveryOff says at start that this instance delivers no webhook, and,
// on SQLite, where no other instance can, that delivery is paused and for
// how long the outbox keeps the events waiting for it.
func logDeliveryOff(cfg config, log *slog.Logger) {
	if cfg.postgres() {
		log.Info("webhooks: delivery is off on this instance (RESOURCEAPI_WEBHOOKS_DELIVER=false); instances with it on deliver")
		return
	}
	log.Warn("webhooks: delivery is paused (RESOURCEAPI_WEBHOOKS_DELIVER=false) and no other instance delivers on SQLite: "+
		"events wait in the outbox and are delivered when the server runs with it on again, "+
		"but events older than the outbox retention are purged before they reach an endpoint",
		"outbox_retention", cfg.outboxRetention().String())
}
