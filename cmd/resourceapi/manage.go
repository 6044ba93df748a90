package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
)

// The management commands (user, apikey, client, seed) write through the
// same rule layer as the API, acting as the service itself
// (resourceapi.SystemCaller): validation, hashing, generated secrets and
// events are the same. They work on an existing database only, and say on
// stderr which one; they open it beside a server that may be running on it
// (sqlite.Options.Beside), and the server notices their writes.

// manager is what a management command works with.
type manager struct {
	svc            *resourceapi.Service
	db             store
	stdin          io.Reader
	stdout, stderr io.Writer
}

// managed turns a management command's function into an action: it opens
// the configured database, which must exist, and closes it after.
func managed(f func(ctx context.Context, m *manager, args []string) error) action {
	return func(ctx context.Context, e *invocation, args []string) error {
		cfg, err := loadConfig(e.getenv)
		if err != nil {
			return err
		}
		db, err := openExisting(ctx, cfg, e.stderr)
		if err != nil {
			return err
		}
		defer db.Close()
		svc := resourceapi.NewService(db, argon2id.New())
		setWebhookPolicy(cfg, svc)
		return f(ctx, &manager{svc: svc, db: db,
			stdin: e.stdin, stdout: e.stdout, stderr: e.stderr}, args)
	}
}

// openExisting opens the configured database for a command that may run
// beside a server (see sqlite.Options.Beside). A SQLite file must exist: a
// management command never creates a database. It says on stderr which
// database it uses.
func openExisting(ctx context.Context, cfg config, stderr io.Writer) (store, error) {
	if !cfg.postgres() {
		if err := cfg.requireSQLiteFile(); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(stderr, "resourceapi: using %s\n", cfg.describeDatabase())
	if cfg.postgres() {
		return postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: 2})
	}
	return sqlite.Open(ctx, cfg.sqlitePath(), sqlite.Options{Beside: true})
}

// system is the caller every management command acts as.
var system = resourceapi.SystemCaller()

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// eachRecord calls f with every record of res matching q, page by page.
func (m *manager) eachRecord(ctx context.Context, res *resourceapi.Resource, q resourceapi.ListQuery, f func(resourceapi.Record) error) error {
	q.Limit = resourceapi.MaxLimit
	q, err := resourceapi.NewListQuery(res, q)
	if err != nil {
		return err
	}
	for {
		page, err := m.svc.List(ctx, system, res, 0, q)
		if err != nil {
			return err
		}
		for _, r := range page.Records {
			if err := f(r); err != nil {
				return err
			}
		}
		if len(page.Records) < q.Limit {
			return nil
		}
		q.Offset += q.Limit
	}
}

// user returns the user with this email (case-insensitively), deleted or
// not, as a person would name them.
func (m *manager) user(ctx context.Context, email string) (resourceapi.Record, error) {
	acct, err := m.db.AccountByEmail(ctx, email)
	if err != nil {
		return nil, explain("find user "+email, err)
	}
	return acct.User, nil
}

var userCreateCommand = &command{
	name:     "user create",
	synopsis: "--email E --name N [--role R]... [--permission P]... [--password-stdin]",
	summary:  "create a user",
	about: `Create a user through the same rules as the API. Without --password-stdin
the user has no password and signs in with API keys only (see apikey create).`,
	setup: func(fs *flag.FlagSet) action {
		email := fs.String("email", "", "the user's `email` address (required)")
		name := fs.String("name", "", "the user's `name` (required)")
		var roles, perms stringList
		fs.Var(&roles, "role", "a `role`: user, editor or admin (repeatable; default user)")
		fs.Var(&perms, "permission", "a `permission` <resource>:<action> granted directly (repeatable)")
		pwStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
		return managed(func(ctx context.Context, m *manager, args []string) error {
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
				pw, err := readLine(m.stdin)
				if err != nil {
					return err
				}
				rec["password"] = pw
			}
			u, err := m.svc.Create(ctx, system, resourceapi.Users, 0, rec)
			if err != nil {
				return explain("create user", err)
			}
			fmt.Fprintf(m.stdout, "Created user %s (%s) with roles %s.\n", u["email"], u["name"], strings.Join(u.Strings("roles"), ", "))
			return nil
		})
	},
}

// readLine reads the first line of r, without its line ending.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// userJSON is a user as user list --json writes it.
type userJSON struct {
	ID          int64     `json:"id"`
	Email       string    `json:"email"`
	Name        string    `json:"name"`
	Roles       []string  `json:"roles"`
	Permissions []string  `json:"permissions"`
	Deleted     bool      `json:"deleted"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

var userListCommand = &command{
	name:     "user list",
	synopsis: "[--role R] [--deleted] [--json]",
	summary:  "list users: email, name, roles, permissions, creation time",
	about: `List the active users (or, with --deleted, the soft-deleted ones), by email:
email, name, roles, permissions granted directly, and creation time (RFC 3339,
UTC). --json writes a JSON array for scripts, with ids.`,
	setup: func(fs *flag.FlagSet) action {
		role := fs.String("role", "", "only users with this `role`: user, editor or admin")
		deleted := fs.Bool("deleted", false, "list the soft-deleted users instead of the active ones")
		asJSON := fs.Bool("json", false, "write JSON for scripts")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			status := resourceapi.StatusActive
			if *deleted {
				status = resourceapi.StatusDeleted
			}
			q := resourceapi.ListQuery{Sort: "email", Filters: []resourceapi.FilterValue{
				{Filter: resourceapi.Users.Filter("status"), Value: status},
			}}
			if *role != "" {
				if !slices.Contains(resourceapi.RoleNames(), *role) {
					return usageErrorf("user list: --role must be one of %s", strings.Join(resourceapi.RoleNames(), ", "))
				}
				q.Filters = append(q.Filters, resourceapi.FilterValue{Filter: resourceapi.Users.Filter("role"), Value: *role})
			}
			var users []userJSON
			err := m.eachRecord(ctx, resourceapi.Users, q, func(u resourceapi.Record) error {
				created, _ := u["created_at"].(time.Time)
				updated, _ := u["updated_at"].(time.Time)
				name, _ := u["name"].(string)
				email, _ := u["email"].(string)
				users = append(users, userJSON{ID: u.ID(), Email: email, Name: name,
					Roles: nonNil(u.Strings("roles")), Permissions: nonNil(u.Strings("permissions")),
					Deleted: u.Bool("deleted"), CreatedAt: created.UTC(), UpdatedAt: updated.UTC()})
				return nil
			})
			if err != nil {
				return explain("list users", err)
			}
			if *asJSON {
				return writeJSON(m.stdout, nonNil(users))
			}
			tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EMAIL\tNAME\tROLES\tPERMISSIONS\tCREATED")
			for _, u := range users {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Email, u.Name, strings.Join(u.Roles, ","),
					firstNonEmpty(strings.Join(u.Permissions, ","), "-"), u.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		})
	},
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

var userSetPasswordCommand = &command{
	name:     "user set-password",
	synopsis: "<email>",
	summary:  "set a user's password, read from standard input",
	about: `Set the password of the user with this email. On a terminal it asks for the
password twice, without showing it; otherwise it reads the first line of
standard input:

  printf '%s\n' "$NEW_PASSWORD" | resourceapi user set-password ann@example.com

The rules of the API apply (8 to 1024 characters). Other credentials of the
user (API keys, tokens) are not changed.`,
	minArgs: 1, maxArgs: 1,
	setup: func(fs *flag.FlagSet) action {
		return managed(func(ctx context.Context, m *manager, args []string) error {
			u, err := m.user(ctx, args[0])
			if err != nil {
				return err
			}
			pw, err := m.readNewPassword(u["email"])
			if err != nil {
				return err
			}
			if pw == "" {
				return errors.New("set password: the password is empty (it is read from the first line of standard input)")
			}
			if _, err := m.svc.Update(ctx, system, resourceapi.Users, resourceapi.Address{ID: u.ID()},
				resourceapi.Record{"password": pw}, nil); err != nil {
				return explain("set password of "+fmt.Sprint(u["email"]), err)
			}
			fmt.Fprintf(m.stdout, "Changed the password of %s.\n", u["email"])
			return nil
		})
	},
}

// readNewPassword reads a password: twice without echo from a terminal, or
// the first line of standard input.
func (m *manager) readNewPassword(email any) (string, error) {
	f, ok := m.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return readLine(m.stdin)
	}
	ask := func(prompt string) (string, error) {
		fmt.Fprint(m.stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(m.stderr)
		return string(b), err
	}
	pw, err := ask(fmt.Sprintf("New password for %s: ", email))
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	again, err := ask("Again: ")
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if pw != again {
		return "", errors.New("set password: the two passwords differ; nothing changed")
	}
	return pw, nil
}

var userGrantCommand = &command{
	name:     "user grant",
	synopsis: "<email> [--role R]... [--permission P]...",
	summary:  "give a user roles or permissions",
	about: `Add roles and permissions to the user with this email, through the same
rules as the API. Roles: user, editor, admin. Permissions: <resource>:<action>,
with action read, write or delete (for example orders:read).`,
	minArgs: 1, maxArgs: 1,
	setup: func(fs *flag.FlagSet) action { return changeAccess(fs, true) },
}

var userRevokeCommand = &command{
	name:     "user revoke",
	synopsis: "<email> [--role R]... [--permission P]...",
	summary:  "take roles or permissions from a user",
	about: `Remove roles and permissions from the user with this email, through the same
rules as the API: the last admin keeps the admin role. Permissions that a
role grants are taken by revoking the role.`,
	minArgs: 1, maxArgs: 1,
	setup: func(fs *flag.FlagSet) action { return changeAccess(fs, false) },
}

// errChanged is the condition's error when another write changed a user's
// roles or permissions between the read and the update.
var errChanged = errors.New("roles or permissions changed meanwhile")

// changeAccess declares user grant's (grant) or user revoke's flags and
// returns its action: it reads the user's roles and permissions, changes
// them, and updates the user through Service.Update on the condition that
// nobody changed them meanwhile (else it starts again).
func changeAccess(fs *flag.FlagSet, grant bool) action {
	var roles, perms stringList
	verb := "revoke"
	if grant {
		verb = "grant"
	}
	fs.Var(&roles, "role", "a `role` to "+verb+": user, editor or admin (repeatable)")
	fs.Var(&perms, "permission", "a `permission` <resource>:<action> to "+verb+" (repeatable)")
	return managed(func(ctx context.Context, m *manager, args []string) error {
		if len(roles) == 0 && len(perms) == 0 {
			return usageErrorf("user %s: give at least one --role or --permission", verb)
		}
		u, err := m.user(ctx, args[0])
		if err != nil {
			return err
		}
		change := func(have, names []string) []string {
			out := slices.Clone(have)
			for _, n := range names {
				if grant && !slices.Contains(out, n) {
					out = append(out, n)
				}
				if !grant {
					out = slices.DeleteFunc(out, func(h string) bool { return h == n })
				}
			}
			return out
		}
		for attempt := 0; ; attempt++ {
			cur, err := m.svc.Get(ctx, system, resourceapi.Users, resourceapi.Address{ID: u.ID()})
			if err != nil {
				return explain("read user "+fmt.Sprint(u["email"]), err)
			}
			haveRoles, havePerms := cur.Strings("roles"), cur.Strings("permissions")
			patch := resourceapi.Record{}
			if len(roles) > 0 {
				patch["roles"] = change(haveRoles, roles)
			}
			if len(perms) > 0 {
				patch["permissions"] = change(havePerms, perms)
			}
			unchanged := func(stored resourceapi.Record) error {
				if !slices.Equal(stored.Strings("roles"), haveRoles) || !slices.Equal(stored.Strings("permissions"), havePerms) {
					return errChanged
				}
				return nil
			}
			out, err := m.svc.Update(ctx, system, resourceapi.Users, resourceapi.Address{ID: u.ID()}, patch, unchanged)
			if errors.Is(err, errChanged) && attempt < 5 {
				continue
			}
			if err != nil {
				return explain(map[bool]string{true: "grant to ", false: "revoke from "}[grant]+fmt.Sprint(u["email"]), err)
			}
			fmt.Fprintf(m.stdout, "%s now has roles %s and permissions %s.\n", out["email"],
				firstNonEmpty(strings.Join(out.Strings("roles"), ", "), "(none)"),
				firstNonEmpty(strings.Join(out.Strings("permissions"), ", "), "(none beyond the roles')"))
			return nil
		}
	})
}

var apikeyCreateCommand = &command{
	name:     "apikey create",
	synopsis: "--user <email> [--name N] [--expires-in D]",
	summary:  "create an API key for a user; the key is printed once, on the last line",
	about: `Create an API key that acts as the user with this email. The key is shown
once, alone on the last line of the output, for scripts:

  KEY=$(resourceapi apikey create --user ann@example.com --name ci | tail -n 1)

With --expires-in (such as 720h), the key stops working that long from now.`,
	setup: func(fs *flag.FlagSet) action {
		email := fs.String("user", "", "`email` of the user the key acts as (required)")
		name := fs.String("name", "", "a `name` to recognise the key by")
		expiresIn := fs.Duration("expires-in", 0, "how long the key works, such as 720h (`duration`); never expires without it")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			if err := required(fs, "user"); err != nil {
				return err
			}
			if *expiresIn < 0 {
				return usageErrorf("%s: --expires-in must be a positive duration, such as 720h", fs.Name())
			}
			u, err := m.user(ctx, *email)
			if err != nil {
				return err
			}
			rec := resourceapi.Record{"user_id": u.ID()}
			if *name != "" {
				rec["name"] = *name
			}
			if *expiresIn > 0 {
				rec["expires_at"] = time.Now().Add(*expiresIn).UTC().Truncate(time.Second)
			}
			k, err := m.svc.Create(ctx, system, resourceapi.APIKeys, 0, rec)
			if err != nil {
				return explain("create API key", err)
			}
			expires := ""
			if at, ok := k["expires_at"].(time.Time); ok {
				expires = " It expires at " + at.UTC().Format(time.RFC3339) + "."
			}
			fmt.Fprintf(m.stdout, "Created API key %d (%s) for %s.%s It is shown once, on the next line:\n%s\n",
				k.ID(), k["prefix"], u["email"], expires, k["key"])
			return nil
		})
	},
}

// apikeyJSON is an API key as apikey list --json writes it (never the key).
type apikeyJSON struct {
	ID        int64     `json:"id"`
	User      string    `json:"user"`
	UserID    int64     `json:"user_id"`
	Prefix    string    `json:"prefix"`
	Name      *string   `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

var apikeyListCommand = &command{
	name:     "apikey list",
	synopsis: "[--user <email>] [--json]",
	summary:  "list API keys: id, user, prefix, name, creation time (never the key)",
	about: `List the API keys: id (for apikey revoke), the email of the user each acts
as, its prefix (the key's first 12 characters), name, and creation time
(RFC 3339, UTC). The keys themselves are never stored. --json writes a JSON
array for scripts.`,
	setup: func(fs *flag.FlagSet) action {
		email := fs.String("user", "", "list only the keys of the user with this `email`")
		asJSON := fs.Bool("json", false, "write JSON for scripts")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			q := resourceapi.ListQuery{Sort: "id"}
			if *email != "" {
				u, err := m.user(ctx, *email)
				if err != nil {
					return err
				}
				q.Filters = append(q.Filters, resourceapi.FilterValue{Filter: resourceapi.APIKeys.Filter("user_id"), Value: u.ID()})
			}
			emails := map[int64]string{}
			var keys []apikeyJSON
			err := m.eachRecord(ctx, resourceapi.APIKeys, q, func(k resourceapi.Record) error {
				uid, _ := k["user_id"].(int64)
				if _, ok := emails[uid]; !ok {
					u, err := m.svc.Get(ctx, system, resourceapi.Users, resourceapi.Address{ID: uid})
					if err != nil {
						return err
					}
					emails[uid], _ = u["email"].(string)
				}
				created, _ := k["created_at"].(time.Time)
				prefix, _ := k["prefix"].(string)
				out := apikeyJSON{ID: k.ID(), User: emails[uid], UserID: uid, Prefix: prefix, CreatedAt: created.UTC()}
				if name, ok := k["name"].(string); ok {
					out.Name = &name
				}
				keys = append(keys, out)
				return nil
			})
			if err != nil {
				return explain("list API keys", err)
			}
			if *asJSON {
				return writeJSON(m.stdout, nonNil(keys))
			}
			tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tPREFIX\tNAME\tCREATED")
			for _, k := range keys {
				name := "-"
				if k.Name != nil {
					name = *k.Name
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", k.ID, k.User, k.Prefix, name, k.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		})
	},
}

var apikeyRevokeCommand = &command{
	name:     "apikey revoke",
	synopsis: "<id>...",
	summary:  "revoke API keys, by the ids apikey list shows",
	about: `Revoke the API keys with these ids (the first column of apikey list). A
revoked key is refused on the very next request, by every server.`,
	minArgs: 1, maxArgs: -1,
	setup: func(fs *flag.FlagSet) action {
		return managed(func(ctx context.Context, m *manager, args []string) error {
			ids := make([]int64, len(args))
			for i, a := range args {
				id, err := strconv.ParseInt(a, 10, 64)
				if err != nil || id < 1 {
					return usageErrorf("apikey revoke: %q is not a key id (see apikey list)", a)
				}
				ids[i] = id
			}
			for _, id := range ids {
				if err := m.svc.Delete(ctx, system, resourceapi.APIKeys, resourceapi.Address{ID: id}, nil); err != nil {
					return explain(fmt.Sprintf("revoke API key %d", id), err)
				}
				fmt.Fprintf(m.stdout, "Revoked API key %d.\n", id)
			}
			return nil
		})
	},
}

var clientCreateCommand = &command{
	name:     "client create",
	synopsis: "--name N --grant G... [--redirect-uri U]... [--public]",
	summary:  "register an OAuth client; prints client_id: and client_secret: (once)",
	about: `Register an OAuth 2.0 client. It prints client_id: and, for a confidential
client, client_secret:, each on its own line; the secret is shown once.`,
	setup: func(fs *flag.FlagSet) action {
		name := fs.String("name", "", "the client's `name`, shown on the sign-in page (required)")
		var grants, uris stringList
		fs.Var(&grants, "grant", "`grant` type: authorization_code, refresh_token, password or client_credentials (repeatable, required)")
		fs.Var(&uris, "redirect-uri", "a redirect `URI` for the authorization code grant (repeatable)")
		public := fs.Bool("public", false, "a public client (browser or native app): no secret, PKCE only")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			if err := required(fs, "name", "grant"); err != nil {
				return err
			}
			rec := resourceapi.Record{"name": *name, "grants": []string(grants), "public": *public}
			if len(uris) > 0 {
				rec["redirect_uris"] = []string(uris)
			}
			c, err := m.svc.Create(ctx, system, resourceapi.OAuthClients, 0, rec)
			if err != nil {
				return explain("create client", err)
			}
			fmt.Fprintf(m.stdout, "client_id: %s\n", c["client_id"])
			if secret, ok := c["secret"].(string); ok {
				fmt.Fprintf(m.stdout, "client_secret: %s\n", secret)
			}
			return nil
		})
	},
}

// clientJSON is an OAuth client as client list --json writes it.
type clientJSON struct {
	ID           int64     `json:"id"`
	ClientID     string    `json:"client_id"`
	Name         string    `json:"name"`
	Public       bool      `json:"public"`
	Grants       []string  `json:"grants"`
	RedirectURIs []string  `json:"redirect_uris"`
	CreatedAt    time.Time `json:"created_at"`
}

var clientListCommand = &command{
	name:     "client list",
	synopsis: "[--json]",
	summary:  "list OAuth clients: client_id, name, type, grants, redirect URIs",
	about: `List the registered OAuth clients: client_id, name, type (confidential or
public), grants, redirect URIs and creation time (RFC 3339, UTC). Secrets are
never stored. --json writes a JSON array for scripts.`,
	setup: func(fs *flag.FlagSet) action {
		asJSON := fs.Bool("json", false, "write JSON for scripts")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			var clients []clientJSON
			err := m.eachRecord(ctx, resourceapi.OAuthClients, resourceapi.ListQuery{Sort: "id"}, func(c resourceapi.Record) error {
				created, _ := c["created_at"].(time.Time)
				id, _ := c["client_id"].(string)
				name, _ := c["name"].(string)
				clients = append(clients, clientJSON{ID: c.ID(), ClientID: id, Name: name, Public: c.Bool("public"),
					Grants: nonNil(c.Strings("grants")), RedirectURIs: nonNil(c.Strings("redirect_uris")), CreatedAt: created.UTC()})
				return nil
			})
			if err != nil {
				return explain("list clients", err)
			}
			if *asJSON {
				return writeJSON(m.stdout, nonNil(clients))
			}
			tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLIENT_ID\tNAME\tTYPE\tGRANTS\tREDIRECT_URIS\tCREATED")
			for _, c := range clients {
				kind := "confidential"
				if c.Public {
					kind = "public"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ClientID, c.Name, kind, strings.Join(c.Grants, ","),
					firstNonEmpty(strings.Join(c.RedirectURIs, ","), "-"), c.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		})
	},
}

var clientDeleteCommand = &command{
	name:     "client delete",
	synopsis: "<client_id>...",
	summary:  "delete OAuth clients, by client_id",
	about: `Delete the OAuth clients with these client_ids (see client list): their
authorization codes and refresh tokens stop working.`,
	minArgs: 1, maxArgs: -1,
	setup: func(fs *flag.FlagSet) action {
		return managed(func(ctx context.Context, m *manager, args []string) error {
			for _, cid := range args {
				c, err := m.db.Client(ctx, cid)
				if err != nil {
					return explain("find client "+cid, err)
				}
				if err := m.svc.Delete(ctx, system, resourceapi.OAuthClients, resourceapi.Address{ID: c.Record.ID()}, nil); err != nil {
					return explain("delete client "+cid, err)
				}
				fmt.Fprintf(m.stdout, "Deleted OAuth client %s (%s).\n", cid, c.Record["name"])
			}
			return nil
		})
	},
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
