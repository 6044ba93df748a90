// Command lists rewrites how gqlgen's generated code marshals the elements
// of a list of objects: run in graph/ by its go:generate line, after
// gqlgen, it replaces each call of graphql.MarshalSliceConcurrently in the
// file named by its argument (generated.go) with one of graph's
// marshalList, which takes the elements' selection set and runs them one
// after the other when none of their fields reads (graph/lists.go). It
// fails when it finds no call, or one of another shape: gqlgen changed,
// and lists.go must be looked at again.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
)

const (
	call = "graphql.MarshalSliceConcurrently(ctx, len(v), 0, false, func(ctx context.Context, i int) graphql.Marshaler {"
	with = "marshalList(ctx, sel, len(v), func(ctx context.Context, i int) graphql.Marshaler {"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: lists generated.go")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "lists:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	all := bytes.Count(src, []byte("graphql.MarshalSliceConcurrently("))
	n := bytes.Count(src, []byte(call))
	if n == 0 || n != all {
		return fmt.Errorf("%s: %d calls of graphql.MarshalSliceConcurrently, %d of the expected shape", path, all, n)
	}
	out, err := format.Source(bytes.ReplaceAll(src, []byte(call), []byte(with)))
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
