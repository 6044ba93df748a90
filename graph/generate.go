package graph

// The schema and resolvers of the declared resources come from their
// declarations (internal/graphgen), then gqlgen compiles both schemas, and
// its lists are marshaled by marshalList (lists.go, internal/graphgen/cmd/lists),
// and what it makes per operation and per field that graph does not use is
// taken out (internal/graphgen/cmd/trim).
//go:generate go run ../internal/graphgen/cmd/graphgen
//go:generate go tool gqlgen generate --config gqlgen.yml
//go:generate go run ../internal/graphgen/cmd/lists generated.go
//go:generate go run ../internal/graphgen/cmd/trim generated.go
