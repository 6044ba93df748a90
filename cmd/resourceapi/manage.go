package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
)

// The management commands (user, apikey, client) write through the same rule
// layer as the API, acting as the service itself (resourceapi.SystemCaller):
// validation, hashing and generated secrets are the same. They open the
// database beside a server that may be running on it (sqlite.Options.Beside);
// the server notices their writes.

// manage runs a management command: noun is "user", "apikey" or "client".
func manage(ctx context.Context, cfg config, noun string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError(fmt.Sprintf("%s: missing subcommand\n%s", noun, usage))
	}
	verb, args := args[0], args[1:]
	var cmd func(context.Context, *manager, []string) error
	switch noun + " " + verb {
	case "user create":
		cmd = userCreate
	case "apikey create":
		cmd = apikeyCreate
	case "apikey list":
		cmd = apikeyList
	case "apikey revoke":
		cmd = apikeyRevoke
	case "client create":
		cmd = clientCreate
	default:
		return usageError(fmt.Sprintf("unknown command %q\n%s", noun+" "+verb, usage))
	}
	db, err := openStoreBeside(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	m := &manager{svc: resourceapi.NewService(db, argon2id.New()), db: db, stdin: stdin, stdout: stdout, stderr: stderr}
	return cmd(ctx, m, args)
}

// manager is what a management command works with.
type manager struct {
	svc            *resourceapi.Service
	db             store
	stdin          io.Reader
	stdout, stderr io.Writer
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// parseFlags parses args with fs, which must consume them all.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError(fmt.Sprintf("%s: %v", fs.Name(), err))
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0)))
	}
	return nil
}

func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			return usageError(fmt.Sprintf("%s: --%s is required", fs.Name(), n))
		}
	}
	return nil
}

// userCreate: resourceapi user create --email E --name N [--role R]...
// [--permission P]... [--password-stdin]
func userCreate(ctx context.Context, m *manager, args []string) error {
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	email := fs.String("email", "", "email address (required)")
	name := fs.String("name", "", "name (required)")
	var roles, perms stringList
	fs.Var(&roles, "role", "role: user, editor or admin (repeatable; default user)")
	fs.Var(&perms, "permission", "a permission <resource>:<action> granted directly (repeatable)")
	pwStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "email", "name"); err != nil {
		return err
	}
	rec := resourceapi.Record{"email": *email, "name": *name}
	if len(roles) > 0 {
		rec["roles"] = []string(roles)
	}
	if len(perms) > 0 {
		rec["permissions"] = []string(perms)
	}
	if *pwStdin {
		line, err := bufio.NewReader(m.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		rec["password"] = strings.TrimRight(line, "\r\n")
	}
	u, err := m.svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, rec)
	if err != nil {
		return explain("create user", err)
	}
	fmt.Fprintf(m.stdout, "Created user %d <%s> with roles %s.\n", u.ID(), u["email"], strings.Join(u.Strings("roles"), ", "))
	return nil
}

// apikeyCreate: resourceapi apikey create --user <email> [--name N]. The key
// is alone on the last line, for scripts: `... | tail -n 1`.
func apikeyCreate(ctx context.Context, m *manager, args []string) error {
	fs := flag.NewFlagSet("apikey create", flag.ContinueOnError)
	email := fs.String("user", "", "email of the user the key acts as (required)")
	name := fs.String("name", "", "a name to recognise the key by")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "user"); err != nil {
		return err
	}
	acct, err := m.db.AccountByEmail(ctx, *email)
	if err != nil {
		return explain("find user "+*email, err)
	}
	rec := resourceapi.Record{"user_id": acct.User.ID()}
	if *name != "" {
		rec["name"] = *name
	}
	k, err := m.svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, rec)
	if err != nil {
		return explain("create API key", err)
	}
	fmt.Fprintf(m.stdout, "Created API key %d (%s) for user %d <%s>. It is shown once, on the next line:\n%s\n",
		k.ID(), k["prefix"], acct.User.ID(), acct.User["email"], k["key"])
	return nil
}

// apikeyList: resourceapi apikey list [--user <email>]
func apikeyList(ctx context.Context, m *manager, args []string) error {
	fs := flag.NewFlagSet("apikey list", flag.ContinueOnError)
	email := fs.String("user", "", "list only this user's keys")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var owner int64
	if *email != "" {
		acct, err := m.db.AccountByEmail(ctx, *email)
		if err != nil {
			return explain("find user "+*email, err)
		}
		owner = acct.User.ID()
	}
	tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tPREFIX\tNAME\tCREATED")
	for offset := 0; ; offset += resourceapi.MaxLimit {
		page, err := m.svc.List(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, owner,
			resourceapi.ListQuery{Offset: offset, Limit: resourceapi.MaxLimit, Sort: "id"})
		if err != nil {
			return explain("list API keys", err)
		}
		for _, k := range page.Records {
			name, _ := k["name"].(string)
			fmt.Fprintf(tw, "%d\t%v\t%v\t%s\t%v\n", k.ID(), k["user_id"], k["prefix"], name, k["created_at"])
		}
		if len(page.Records) < resourceapi.MaxLimit {
			break
		}
	}
	return tw.Flush()
}

// apikeyRevoke: resourceapi apikey revoke <id>...
func apikeyRevoke(ctx context.Context, m *manager, args []string) error {
	if len(args) == 0 {
		return usageError("apikey revoke: give the id of the key to revoke (see apikey list)")
	}
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id < 1 {
			return usageError(fmt.Sprintf("apikey revoke: %q is not a key id", a))
		}
		if err := m.svc.Delete(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, resourceapi.Item{ID: id}, nil); err != nil {
			return explain(fmt.Sprintf("revoke API key %d", id), err)
		}
		fmt.Fprintf(m.stdout, "Revoked API key %d.\n", id)
	}
	return nil
}

// clientCreate: resourceapi client create --name N --grant G...
// [--redirect-uri U]... [--public]. It prints client_id: and, for a
// confidential client, client_secret:, each on its own line.
func clientCreate(ctx context.Context, m *manager, args []string) error {
	fs := flag.NewFlagSet("client create", flag.ContinueOnError)
	name := fs.String("name", "", "the client's name, shown on the sign-in page (required)")
	var grants, uris stringList
	fs.Var(&grants, "grant", "grant type: authorization_code, refresh_token, password or client_credentials (repeatable, required)")
	fs.Var(&uris, "redirect-uri", "a redirect URI for the authorization code grant (repeatable)")
	public := fs.Bool("public", false, "a public client (browser or native app): no secret, PKCE only")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "name", "grant"); err != nil {
		return err
	}
	rec := resourceapi.Record{"name": *name, "grants": []string(grants), "public": *public}
	if len(uris) > 0 {
		rec["redirect_uris"] = []string(uris)
	}
	c, err := m.svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, rec)
	if err != nil {
		return explain("create client", err)
	}
	fmt.Fprintf(m.stdout, "client_id: %s\n", c["client_id"])
	if secret, ok := c["secret"].(string); ok {
		fmt.Fprintf(m.stdout, "client_secret: %s\n", secret)
	}
	return nil
}

// explain turns an error of the rule layer into one a person at a terminal
// can act on: the message and each field's problem, as the API says them.
func explain(what string, err error) error {
	var e *resourceapi.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", what, e.Message)
	for _, d := range e.Details {
		fmt.Fprintf(&b, "\n  %s: %s", d.Field, d.Message)
	}
	return errors.New(b.String())
}
