package resourceapi

// Posts is the declaration of posts, each by one user, listed under the
// author (/users/{id}/posts). Anyone with posts:read reads them; only their
// author or an admin changes them.
var Posts = NewResource(Resource{
	Name:     "posts",
	Singular: "post",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "author_id", Type: TypeInt, References: "users", Sortable: true},
		{Name: "title", Type: TypeString, Required: true, Sortable: true, Searchable: true, Normalize: trimSpace, Length: &Range{1, 200}, Check: oneLine},
		{Name: "content", Type: TypeString, Required: true, Searchable: true, Length: &Range{1, 100_000}},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Access: Access{Owner: "author_id", Guarded: true, Self: []Op{OpDelete},
		Grants: map[string][]Action{RoleUser: {ActionRead, ActionWrite}, RoleEditor: {ActionDelete}}},
	Parent: "author_id",
	Events: map[Op]string{OpCreate: "postCreated"},
	Example: func(n int) Record {
		return Record{"title": "Post number " + itoa(n), "content": "On the Analytical Engine."}
	},
})
