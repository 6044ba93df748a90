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
// timeout).
func startWebhooks(ctx context.Context, cfg config, store any, service *resourceapi.Service, events resourceapi.Events, log *slog.Logger) func() {
	ws, ok := store.(resourceapi.WebhookStore)
	if !ok {
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
