package graph

import (
	"context"
	"strings"

	"github.com/resourceapi/resourceapi"
)

func (r mutationResolver) CreateUser(ctx context.Context, name, email string) (*User, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := r.h.cfg.Service.Create(ctx, c, resourceapi.Users, 0, resourceapi.Record{"name": name, "email": email})
	if err != nil {
		return nil, err
	}
	return userOf(rec), nil
}

// UpdateUser changes only the arguments that are given and not empty (after
// trimming spaces): null, "" and "  " leave the field as it is.
func (r mutationResolver) UpdateUser(ctx context.Context, id string, name, email *string) (*User, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	patch := resourceapi.Record{}
	for field, v := range map[string]*string{"name": name, "email": email} {
		if v != nil && strings.TrimSpace(*v) != "" {
			patch[field] = *v
		}
	}
	rec, err := r.h.cfg.Service.Update(ctx, c, resourceapi.Users, resourceapi.Address{ID: n}, patch, nil)
	if err != nil {
		return nil, err
	}
	return userOf(rec), nil
}

// DeleteUser returns false for an id that names no user, once the caller is
// known to be allowed to delete users; the store deletes the user's posts
// with them.
func (r mutationResolver) DeleteUser(ctx context.Context, id string) (*bool, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	deleted := true
	err = r.h.cfg.Service.Delete(ctx, c, resourceapi.Users, resourceapi.Address{ID: n}, nil)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		deleted = false
	} else if err != nil {
		return nil, err
	}
	return &deleted, nil
}

// CreatePost creates a post by authorId; the rule layer refuses another
// author than the caller unless the caller is an admin.
func (r mutationResolver) CreatePost(ctx context.Context, title, content, authorID string) (*Post, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	author, err := parseID("authorId", authorID)
	if err != nil {
		return nil, err
	}
	rec, err := r.h.cfg.Service.Create(ctx, c, resourceapi.Posts, 0,
		resourceapi.Record{"title": title, "content": content, "author_id": author})
	if err != nil {
		return nil, err
	}
	return postOf(rec), nil
}
