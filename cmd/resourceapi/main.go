// Command resourceapi serves the users-and-posts API over REST (and, in later
// releases, GraphQL and OAuth) on one listener, on an embedded SQLite file by
// default or on PostgreSQL.
//
// Usage:
//
//	resourceapi [serve]   run the server (the default)
//	resourceapi migrate   bring the database schema up to date and exit
//
// Configuration comes from RESOURCEAPI_* environment variables: see config.go
// and the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// quietRedis is go-redis's logger: it drops the library's messages.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// usageError is a mistake in the command line.
type usageError string

func (e usageError) Error() string { return string(e) }

// run is the whole program, with its environment passed in so tests can run
// it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "user", "apikey", "client":
		return manage(ctx, cfg, cmd, args, stdin, stdout, stderr)
	}
	if len(args) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments; configuration comes from RESOURCEAPI_* variables", cmd))
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, stderr)
	case "migrate":
		return migrate(ctx, cfg, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command %q\n%s", cmd, usage))
}

const usage = `usage: resourceapi [command]

  serve       run the server (the default)
  migrate     bring the database schema up to date and exit

  user create --email E --name N [--role R]... [--permission P]... [--password-stdin]
  apikey create --user <email> [--name N]      prints the key, once, on its last line
  apikey list [--user <email>]
  apikey revoke <id>...
  client create --name N --grant G... [--redirect-uri U]... [--public]
                                               prints client_id: and client_secret:

The management commands work on the configured database, also while a
server runs on it. Configuration is read from RESOURCEAPI_* environment
variables (see README).
`
