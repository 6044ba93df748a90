package resourceapi

// Products is the declaration of products: anyone with products:read reads
// them, editors write them. Deleting a product deletes its reviews; a product
// that an order lists cannot be deleted (orders are records of what was
// sold), which is CodeConflict.
var Products = NewResource(Resource{
	Name:     "products",
	Singular: "product",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "name", Type: TypeString, Required: true, Sortable: true, Searchable: true, Normalize: trimSpace, Length: &Range{1, 200}, Check: oneLine},
		{Name: "description", Type: TypeString, Nullable: true, Searchable: true, Length: &Range{1, 10_000}},
		{Name: "price_cents", Type: TypeInt, Required: true, Sortable: true, Range: &Range{0, 1_000_000_000}},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Access: Access{Grants: map[string][]Action{RoleUser: {ActionRead}, RoleEditor: {ActionWrite}}},
	Example: func(n int) Record {
		return Record{"name": "Analytical Engine " + itoa(n), "description": "A general-purpose mechanical computer.", "price_cents": int64(129900)}
	},
})
