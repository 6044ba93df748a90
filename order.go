package resourceapi

// Order statuses.
const (
	OrderPending   = "pending"
	OrderPaid      = "paid"
	OrderShipped   = "shipped"
	OrderCancelled = "cancelled"
)

// Orders is the declaration of orders: a user's purchase of products, listed
// under the user (/users/{id}/orders). Only their owner or an admin reads or
// changes them; with the default roles only admins write them (orders:write),
// and a user granted it writes only their own. Each item's unit price is the
// product's price when the item is written, and total_cents the sum of the
// items, never taken from a body.
var Orders = NewResource(Resource{
	Name:     "orders",
	Singular: "order",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "user_id", Type: TypeInt, References: "users", Sortable: true},
		{Name: "status", Type: TypeString, Sortable: true, Default: func() any { return OrderPending },
			Enum: []string{OrderPending, OrderPaid, OrderShipped, OrderCancelled}},
		{Name: "items", Type: TypeItems, Required: true, Items: &Items{
			Table: "order_items", Key: "order_id", Min: 1, Max: 100,
			Fields: []Field{
				{Name: "product_id", Type: TypeInt, Required: true, References: "products", Restrict: true},
				{Name: "quantity", Type: TypeInt, Required: true, Range: &Range{1, 10_000}},
				{Name: "unit_price_cents", Type: TypeInt, ReadOnly: true,
					Lookup: &Lookup{Resource: "products", By: "product_id", Field: "price_cents"}},
			},
		}},
		{Name: "total_cents", Type: TypeInt, ReadOnly: true, Computed: true, Sortable: true},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Filters: []Filter{
		{Param: "status", Kind: FilterEqual, Field: "status", Values: []string{OrderPending, OrderPaid, OrderShipped, OrderCancelled}},
	},
	Access:  Access{Owner: "user_id", Private: true, Guarded: true, Grants: map[string][]Action{RoleUser: {ActionRead}}},
	Parent:  "user_id",
	Compute: orderTotal,
	Example: func(n int) Record {
		return Record{"items": []Record{{"product_id": int64(1), "quantity": int64(1 + n%3)}}}
	},
})

// orderTotal sets total_cents from the items, when a write sets them.
func orderTotal(rec Record) {
	items, ok := rec["items"].([]Record)
	if !ok {
		return
	}
	var total int64
	for _, it := range items {
		q, _ := it["quantity"].(int64)
		p, _ := it["unit_price_cents"].(int64)
		total += q * p
	}
	rec["total_cents"] = total
}
