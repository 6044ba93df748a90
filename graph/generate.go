package graph

// The schema and resolvers of the declared resources come from their
// declarations (internal/graphgen), then gqlgen compiles both schemas.
//go:generate go run ../internal/graphgen/cmd/graphgen
//go:generate go tool gqlgen generate --config gqlgen.yml
