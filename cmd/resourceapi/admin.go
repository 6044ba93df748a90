package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// firstAdmin is the first admin serve creates on a database without one,
// checked against the rules before anything else happens, so that a
// password the rules refuse stops the start before a database is made.
type firstAdmin struct {
	rec       resourceapi.Record
	password  string
	generated bool // the password was generated, not configured
}

// firstAdminRecord builds the first admin from RESOURCEAPI_ADMIN_EMAIL and
// RESOURCEAPI_ADMIN_PASSWORD (or a generated password) and validates it as
// the rule layer will, naming the variable and the rule it breaks.
func firstAdminRecord(cfg config) (firstAdmin, error) {
	a := firstAdmin{password: cfg.AdminPassword}
	if a.password == "" {
		a.password, a.generated = rand.Text(), true
	}
	a.rec = resourceapi.Record{
		"name":     "Administrator",
		"email":    cfg.AdminEmail,
		"password": a.password,
		"roles":    []string{resourceapi.RoleAdmin},
	}
	err := resourceapi.Validate(resourceapi.Users, a.rec.Clone(), resourceapi.ModeCreate)
	if err == nil {
		return a, nil
	}
	e, ok := err.(*resourceapi.Error)
	if !ok {
		return firstAdmin{}, fmt.Errorf("first admin: %w", err)
	}
	var msgs []string
	for _, d := range e.Details {
		switch d.Field {
		case "email":
			msgs = append(msgs, "RESOURCEAPI_ADMIN_EMAIL "+d.Message)
		case "password":
			msgs = append(msgs, "RESOURCEAPI_ADMIN_PASSWORD "+d.Message)
		default:
			msgs = append(msgs, d.Field+" "+d.Message)
		}
	}
	return firstAdmin{}, fmt.Errorf("configuration of the first admin: %s", strings.Join(msgs, "; "))
}

// bootstrapAdmin creates the first admin when the database has no active
// admin, so that a fresh installation can be administered at all. A
// generated password is printed once, to stderr, and never again: only by the
// instance that created the admin, when several start together on one
// database. On a database that has an admin, RESOURCEAPI_ADMIN_EMAIL and
// RESOURCEAPI_ADMIN_PASSWORD change nothing: a value that differs from the
// database's is logged as ignored, with the command that does change it.
//
// The check and the creation are one transaction (Service.CreateFirst) under the
// lock that guards the last admin, so instances take it in turn: the first
// finds no admin and creates one, the others wait, find it and create
// nothing. That holds in every interleaving and whatever each instance was
// configured with. Creating and treating a conflict on the admin's email as
// "another instance did it" would only hold when all instances share one
// RESOURCEAPI_ADMIN_EMAIL: with two emails, two admins would be created.
func bootstrapAdmin(ctx context.Context, cfg config, first firstAdmin, svc *resourceapi.Service, hasher resourceapi.PasswordHasher, stderr io.Writer, log *slog.Logger) error {
	db := svc.Store()
	admins, err := resourceapi.NewListQuery(resourceapi.Users, resourceapi.ListQuery{Limit: 1, Filters: []resourceapi.FilterValue{
		{Filter: resourceapi.Users.Filter("status"), Value: resourceapi.StatusActive},
		{Filter: resourceapi.Users.Filter("role"), Value: resourceapi.RoleAdmin},
	}})
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	page, err := db.List(ctx, resourceapi.Users, admins)
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if page.Total > 0 {
		return reportIgnoredAdmin(ctx, cfg, db, hasher, log)
	}
	created, ok, err := svc.CreateFirst(ctx, resourceapi.SystemCaller(), resourceapi.Users, first.rec.Clone())
	if resourceapi.ErrorCode(err) == resourceapi.CodeValidation {
		return fmt.Errorf("bootstrap admin (check RESOURCEAPI_ADMIN_EMAIL and RESOURCEAPI_ADMIN_PASSWORD): %w", err)
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin %s: %w", cfg.AdminEmail, err)
	}
	if !ok {
		return nil // another instance created the first admin meanwhile
	}
	key, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0,
		resourceapi.Record{"user_id": created.ID(), "name": "bootstrap"})
	if err != nil {
		return fmt.Errorf("bootstrap admin's API key: %w", err)
	}
	shown, once := "(from RESOURCEAPI_ADMIN_PASSWORD)", "The API key is shown once and never again."
	if first.generated {
		shown, once = first.password, "The password and the API key are shown once and never again."
	}
	fmt.Fprintf(stderr, "\nCreated the first admin user.\n  email:    %s\n  password: %s\n  API key:  %s\n%s\n\n",
		created["email"], shown, key["key"], once)
	return nil
}

// reportIgnoredAdmin logs, on a database that already has an admin, the
// admin settings that differ from it: they only ever create the first admin.
func reportIgnoredAdmin(ctx context.Context, cfg config, db resourceapi.Store, hasher resourceapi.PasswordHasher, log *slog.Logger) error {
	if !cfg.AdminEmailSet && cfg.AdminPassword == "" {
		return nil
	}
	ids, ok := db.(resourceapi.IdentityStore)
	if !ok {
		return nil
	}
	acct, err := ids.AccountByEmail(ctx, cfg.AdminEmail)
	switch {
	case resourceapi.ErrorCode(err) == resourceapi.CodeNotFound:
	case err != nil:
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	isAdmin := err == nil && resourceapi.Users.Holds(acct.User)
	if cfg.AdminEmailSet && !isAdmin {
		log.Warn("RESOURCEAPI_ADMIN_EMAIL is ignored: the database already has an admin, and the variable only names the first admin of a database without one",
			"email", cfg.AdminEmail,
			"to_create_an_admin", "resourceapi user create --email <email> --name <name> --role admin --password-stdin",
			"to_make_a_user_admin", "resourceapi user grant <email> --role admin")
		return nil
	}
	if cfg.AdminPassword == "" || !isAdmin {
		return nil
	}
	if same, err := hasher.Verify(acct.PasswordHash, cfg.AdminPassword); err == nil && same {
		return nil
	}
	log.Warn("RESOURCEAPI_ADMIN_PASSWORD is ignored: it differs from the admin's password, and it only sets the password of the first admin of a database without one",
		"email", acct.User["email"],
		"to_change_a_password", "resourceapi user set-password "+fmt.Sprint(acct.User["email"]))
	return nil
}
