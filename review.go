package resourceapi

// Reviews is the declaration of reviews: a user's rating of a product, listed
// under the product (/products/{id}/reviews). Anyone with reviews:read reads
// them; only their author or an admin changes or deletes them.
var Reviews = NewResource(Resource{
	Name:     "reviews",
	Singular: "review",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "product_id", Type: TypeInt, Required: true, References: "products", Sortable: true},
		{Name: "user_id", Type: TypeInt, References: "users", Sortable: true},
		{Name: "rating", Type: TypeInt, Required: true, Sortable: true, Range: &Range{1, 5}},
		{Name: "comment", Type: TypeString, Nullable: true, Searchable: true, Length: &Range{1, 5_000}},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Filters: []Filter{
		{Param: "rating", Kind: FilterEqual, Field: "rating", Values: []string{"1", "2", "3", "4", "5"}},
	},
	Access: Access{Owner: "user_id", Guarded: true, Self: []Op{OpDelete},
		Grants: map[string][]Action{RoleUser: {ActionRead, ActionWrite}}},
	Parent: "product_id",
	Example: func(n int) Record {
		return Record{"rating": int64(1 + n%5), "comment": "Review number " + itoa(n) + ": computes as promised."}
	},
})
