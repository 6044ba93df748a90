package resourceapi

// Articles is the declaration of articles, written by editors, with comments
// under them (/articles/{id}/comments). The author is whoever creates one;
// only an admin names someone else. Editors change and delete any article
// (articles:write, articles:delete). Deleting an article deletes its
// comments.
var Articles = NewResource(Resource{
	Name:     "articles",
	Singular: "article",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "author_id", Type: TypeInt, References: "users", Sortable: true},
		{Name: "title", Type: TypeString, Required: true, Sortable: true, Searchable: true, Normalize: trimSpace, Length: &Range{1, 200}, Check: oneLine},
		{Name: "body", Type: TypeString, Required: true, Searchable: true, Length: &Range{1, 100_000}},
		{Name: "published", Type: TypeBool, Sortable: true, Default: func() any { return false }},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Filters: []Filter{
		{Param: "published", Kind: FilterEqual, Field: "published", Values: []string{"true", "false"}},
	},
	Access: Access{Owner: "author_id", Grants: map[string][]Action{RoleUser: {ActionRead}, RoleEditor: {ActionWrite, ActionDelete}}},
	Example: func(n int) Record {
		return Record{"title": "Notes on the Engine, part " + itoa(n), "body": "The Analytical Engine weaves algebraic patterns.", "published": n%2 == 0}
	},
})
