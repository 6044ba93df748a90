package graph

import (
	"strconv"
	"time"

	"github.com/resourceapi/resourceapi"
)

// User is the GraphQL User: what a user record shows over GraphQL.
type User struct {
	ID        string
	Name      string
	Email     string
	CreatedAt string

	id int64
}

// Post is the GraphQL Post. Its author is resolved from authorID, in a batch
// with the other posts' authors.
type Post struct {
	ID        string
	Title     string
	Content   string
	CreatedAt string

	id, authorID int64
}

// timeFormat is how the service shows timestamps (as REST does): RFC 3339
// in UTC with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func userOf(rec resourceapi.Record) *User {
	if rec == nil {
		return nil
	}
	id := rec.ID()
	name, _ := rec["name"].(string)
	email, _ := rec["email"].(string)
	return &User{ID: strconv.FormatInt(id, 10), Name: name, Email: email, CreatedAt: timestamp(rec), id: id}
}

func postOf(rec resourceapi.Record) *Post {
	if rec == nil {
		return nil
	}
	id := rec.ID()
	title, _ := rec["title"].(string)
	content, _ := rec["content"].(string)
	author, _ := rec["author_id"].(int64)
	return &Post{ID: strconv.FormatInt(id, 10), Title: title, Content: content, CreatedAt: timestamp(rec), id: id, authorID: author}
}

func timestamp(rec resourceapi.Record) string {
	t, _ := rec["created_at"].(time.Time)
	return resourceapi.Timestamp(t).Format(timeFormat)
}
