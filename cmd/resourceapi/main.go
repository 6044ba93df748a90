// Command resourceapi serves the users-and-posts API over REST, GraphQL and
// OAuth 2.0 on one listener, on an embedded SQLite file by default or on
// PostgreSQL, and manages its database.
//
// Usage:
//
//	resourceapi [serve]         run the server (the default)
//	resourceapi migrate         create the database or bring its schema up to date
//	resourceapi version         print the version and build
//	resourceapi help [command]  list the commands, or one command's usage and flags
//
// and the management commands (seed, backup, user, apikey, client) that
// resourceapi help lists. Configuration comes from RESOURCEAPI_* environment
// variables: see config.go, the README and docs/operations.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	goredis "github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs every failed dial, many a second while Redis is down.
	// The components that use Redis (rate limits, events) report an outage
	// themselves, once every few seconds, and when it ends.
	goredis.SetLogger(quietRedis{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "resourceapi:", err)
		var usage usageError
		if errors.As(err, &usage) {
			if usage.usage != "" {
				fmt.Fprintf(os.Stderr, "\n%s", usage.usage)
			}
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// quietRedis is go-redis's logger: it drops the library's messages.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
