package graph

import (
	"strconv"
	"time"

	"github.com/resourceapi/resourceapi"
)

// User is the GraphQL User: what a user record shows over GraphQL. Its id
// and createdAt are methods, formatted only when a query selects them.
type User struct {
	Name  string
	Email string

	id      int64
	created time.Time
}

func (u *User) ID() string        { return strconv.FormatInt(u.id, 10) }
func (u *User) CreatedAt() string { return resourceapi.Timestamp(u.created).Format(timeFormat) }

// Post is the GraphQL Post. Its author is resolved from authorID, in a batch
// with the other posts' authors.
type Post struct {
	Title   string
	Content string

	id, authorID int64
	created      time.Time
}

func (p *Post) ID() string        { return strconv.FormatInt(p.id, 10) }
func (p *Post) CreatedAt() string { return resourceapi.Timestamp(p.created).Format(timeFormat) }

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
	created, _ := rec["created_at"].(time.Time)
	return &User{Name: name, Email: email, id: id, created: created}
}

func postOf(rec resourceapi.Record) *Post {
	if rec == nil {
		return nil
	}
	id := rec.ID()
	title, _ := rec["title"].(string)
	content, _ := rec["content"].(string)
	author, _ := rec["author_id"].(int64)
	created, _ := rec["created_at"].(time.Time)
	return &Post{Title: title, Content: content, id: id, authorID: author, created: created}
}
