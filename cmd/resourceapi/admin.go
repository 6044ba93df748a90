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
// is printed once, to stderr, and never again: only by the instance that
// created the admin, when several start together on one database.
//
// The check and the creation are one transaction (Service.CreateFirst) under the
// lock that guards the last admin, so instances take it in turn: the first
// finds no admin and creates one, the others wait, find it and create
// nothing. That holds in every interleaving and whatever each instance was
// configured with. Creating and treating a conflict on the admin's email as
// "another instance did it" would only hold when all instances share one
// RESOURCEAPI_ADMIN_EMAIL: with two emails, two admins would be created.
func bootstrapAdmin(ctx context.Context, cfg config, svc *resourceapi.Service, stderr io.Writer) error {
	db := svc.Store()
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
		// The usual start: no need to hash a password or take the lock.
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
	created, ok, err := svc.CreateFirst(ctx, resourceapi.SystemCaller(), resourceapi.Users, rec)
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
	if generated {
		shown, once = password, "The password and the API key are shown once and never again."
	}
	fmt.Fprintf(stderr, "\nCreated the first admin user (id %d).\n  email:    %s\n  password: %s\n  API key:  %s\n%s\n\n",
		created.ID(), cfg.AdminEmail, shown, key["key"], once)
	return nil
}
