package resourceapi

// Comments is the declaration of comments on articles
// (/articles/{id}/comments). Anyone with comments:read reads them; only their
// author or an admin changes them, and editors delete any (comments:delete
// is moderation).
var Comments = NewResource(Resource{
	Name:     "comments",
	Singular: "comment",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "article_id", Type: TypeInt, Required: true, References: "articles", Sortable: true},
		{Name: "author_id", Type: TypeInt, References: "users", Sortable: true},
		{Name: "body", Type: TypeString, Required: true, Searchable: true, Length: &Range{1, 10_000}},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Access: Access{Owner: "author_id", Guarded: true, Self: []Op{OpDelete},
		Grants: map[string][]Action{RoleUser: {ActionRead, ActionWrite}, RoleEditor: {ActionDelete}}},
	Parent: "article_id",
	Example: func(n int) Record {
		return Record{"body": "Comment number " + itoa(n) + ": a fine point about the mill."}
	},
})
