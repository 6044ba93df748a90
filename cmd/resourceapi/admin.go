package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/url"

	"github.com/resourceapi/resourceapi"
)

// bootstrapAdmin creates the first admin when the database has no active
// admin, so that a fresh installation can be administered at all. The
// password comes from the configuration or is generated, and a generated one
// is printed once, to stderr, and never again.
func bootstrapAdmin(ctx context.Context, cfg config, db resourceapi.Store, hasher resourceapi.PasswordHasher, stderr io.Writer) error {
	admins, err := resourceapi.ParseListQuery(resourceapi.Users, url.Values{
		"role": {resourceapi.RoleAdmin}, "limit": {"1"},
	})
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	page, err := db.List(ctx, resourceapi.Users, admins)
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if page.Total > 0 {
		return nil
	}
	password, generated := cfg.AdminPassword, false
	if password == "" {
		password, generated = rand.Text(), true
	}
	rec := resourceapi.Record{
		"name":     "Administrator",
		"email":    cfg.AdminEmail,
		"password": password,
		"roles":    []string{resourceapi.RoleAdmin},
	}
	created, err := resourceapi.NewService(db, hasher).Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, rec)
	if resourceapi.ErrorCode(err) == resourceapi.CodeValidation {
		return fmt.Errorf("bootstrap admin (check RESOURCEAPI_ADMIN_EMAIL and RESOURCEAPI_ADMIN_PASSWORD): %w", err)
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin %s: %w", cfg.AdminEmail, err)
	}
	if generated {
		fmt.Fprintf(stderr, "\nCreated the first admin user (id %d).\n  email:    %s\n  password: %s\nThis password is shown once and never again.\n\n",
			created.ID(), cfg.AdminEmail, password)
	} else {
		fmt.Fprintf(stderr, "Created the first admin user %s (id %d) with RESOURCEAPI_ADMIN_PASSWORD.\n", cfg.AdminEmail, created.ID())
	}
	return nil
}
