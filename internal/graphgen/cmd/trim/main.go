// Command trim takes out of gqlgen's generated code what it does per
// operation or per field that graph has no use for, or does once per
// document instead. It is run in graph/
// after gqlgen (see generate.go), on the file named by its argument
// (generated.go).
//
//   - The map of input unmarshalers that Exec builds for every operation
//     (graphql.BuildUnmarshalerMap: a method value per input type, a map,
//     reflection, and a context value) serves only
//     graphql.UnmarshalInputFromContext, which graph does not call: the
//     build and the context value are removed, and trim fails when a Go
//     file of graph (other than the generated ones) names
//     UnmarshalInputFromContext.
//   - Every object's fields are collected by ec.collectFields (graph's
//     fields.go), which keeps them per cached document, instead of
//     graphql.CollectFields, which collects them again for every
//     operation.
//   - Every object hands its deferred fields over
//     (ec.ProcessDeferredGroup, which returns at once when there are none)
//     with its path, which graphql.GetPath allocates: the hand-over is made
//     only when the object has deferred fields.
//   - Every object makes its map of deferred labels when it has a deferred
//     field, not always; and an operation's channel of deferred results is
//     made by deferredResults (graph's fields.go): none for a document that
//     cannot defer anything.
//   - Every scalar field's context is made with a new error
//     (errors.New("field of type String does not have child fields")),
//     which only a child of a scalar field would ever return, and by
//     graphql.NewScalarFieldContext, which wraps it in a new closure: each
//     error becomes a package variable made once, with the same message,
//     and a package function that returns it, which newScalarFieldContext
//     (graph's fields.go) puts in the context as gqlgen would the closure.
//
// It fails when it finds none of them, or one in another shape: gqlgen
// changed, and what it does must be looked at again.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: trim generated.go")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "trim:", err)
		os.Exit(1)
	}
}

var (
	// build is the unmarshalers' map as gqlgen writes it in Exec.
	build = regexp.MustCompile(`(?m)^\tinputUnmarshalMap := graphql\.BuildUnmarshalerMap\(\n(?:\t\tec\.unmarshalInput\w+,\n)+\t\)\n`)
	// with is each use of it.
	with = regexp.MustCompile(`(?m)^\t+ctx = graphql\.WithUnmarshalerMap\(ctx, inputUnmarshalMap\)\n`)
	// collect is each collection of a selection set's fields.
	collect = regexp.MustCompile(`graphql\.CollectFields\(ec\.OperationContext, `)
	// group is the hand-over of an object's deferred fields, made (with
	// the object's path, two allocations) whether or not it has any.
	group = regexp.MustCompile(`(?m)^\tec\.ProcessDeferredGroup\(graphql\.DeferredGroup\{\n\t\tDefers: +deferLabelToView,\n\t\tPath: +graphql\.GetPath\(ctx\),\n\t\tFieldSet: +deferredFieldSet,\n\t\tContext: +ctx,\n\t\}\)\n`)
	// views is an object's map of deferred labels, made whether or not it
	// has deferred fields, and view each write to it.
	views = regexp.MustCompile(`(?m)^\tdeferLabelToView := make\(map\[string\]\*graphql\.FieldSetView\)\n`)
	view  = regexp.MustCompile(`(?m)^(\t+)deferLabelToView\[deferrable\.Label\] = view\n`)
	// results is the channel of an operation's deferred results.
	results = regexp.MustCompile(`newExecutionContext\(opCtx, e, make\(chan graphql\.DeferredResult\)\)`)
	// scalar is the making of a scalar field's context, once leaf is
	// replaced.
	scalar = regexp.MustCompile(`graphql\.NewScalarFieldContext\(("\w+", field, (?:true|false), (?:true|false)), errLeaf(\w+)\)`)
	// leaf is the error of a scalar field's children.
	leaf = regexp.MustCompile(`errors\.New\("field of type (\w+) does not have child fields"\)`)
)

func run(path string) error {
	if err := noInputFromContext(filepath.Dir(path)); err != nil {
		return err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := len(build.FindAllIndex(src, -1)); n != 1 || bytes.Count(src, []byte("BuildUnmarshalerMap(")) != 1 {
		return fmt.Errorf("%s: %d builds of the input unmarshalers of the expected shape, want 1", path, n)
	}
	src = build.ReplaceAll(src, nil)
	if n := len(with.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("WithUnmarshalerMap(")) {
		return fmt.Errorf("%s: %d uses of the input unmarshalers of the expected shape", path, n)
	}
	src = with.ReplaceAll(src, nil)
	if bytes.Contains(src, []byte("inputUnmarshalMap")) {
		return fmt.Errorf("%s: inputUnmarshalMap is used in another way", path)
	}

	if n := len(collect.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("CollectFields(")) {
		return fmt.Errorf("%s: %d collections of fields of the expected shape", path, n)
	}
	src = collect.ReplaceAll(src, []byte("ec.collectFields("))

	if n := len(group.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("ProcessDeferredGroup(")) {
		return fmt.Errorf("%s: %d hand-overs of deferred fields of the expected shape", path, n)
	}
	src = group.ReplaceAllFunc(src, func(m []byte) []byte {
		return append(append([]byte("\tif len(deferLabelToView) > 0 {\n"), m...), "\t}\n"...)
	})

	if n := len(views.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("deferLabelToView := ")) {
		return fmt.Errorf("%s: %d maps of deferred labels of the expected shape", path, n)
	}
	src = views.ReplaceAll(src, []byte("\tvar deferLabelToView map[string]*graphql.FieldSetView\n"))
	if n := len(view.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("deferLabelToView[deferrable.Label] =")) {
		return fmt.Errorf("%s: %d writes of deferred labels of the expected shape", path, n)
	}
	src = view.ReplaceAll(src, []byte("${1}if deferLabelToView == nil {\n${1}\tdeferLabelToView = make(map[string]*graphql.FieldSetView)\n${1}}\n${0}"))
	if n := len(results.FindAllIndex(src, -1)); n != 1 || bytes.Count(src, []byte("chan graphql.DeferredResult)")) != 1 {
		return fmt.Errorf("%s: %d channels of deferred results of the expected shape, want 1", path, n)
	}
	src = results.ReplaceAll(src, []byte("newExecutionContext(opCtx, e, deferredResults(opCtx))"))

	var types []string
	src = leaf.ReplaceAllFunc(src, func(m []byte) []byte {
		t := string(leaf.FindSubmatch(m)[1])
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
		return []byte("errLeaf" + t)
	})
	if len(types) == 0 || bytes.Contains(src, []byte(`does not have child fields")`)) {
		return fmt.Errorf("%s: no scalar field's error of the expected shape, or one of another", path)
	}
	slices.Sort(types)
	if n := len(scalar.FindAllIndex(src, -1)); n == 0 || n != bytes.Count(src, []byte("NewScalarFieldContext(")) {
		return fmt.Errorf("%s: %d scalar field contexts of the expected shape", path, n)
	}
	src = scalar.ReplaceAll(src, []byte("newScalarFieldContext($1, childLeaf$2)"))
	var vars strings.Builder
	vars.WriteString("\n// The error a child of a scalar field's context returns, made once per\n// type, and the function that returns it (internal/graphgen/cmd/trim).\nvar (\n")
	for _, t := range types {
		fmt.Fprintf(&vars, "\terrLeaf%s = errors.New(\"field of type %s does not have child fields\")\n", t, t)
	}
	for _, t := range types {
		fmt.Fprintf(&vars, "\tchildLeaf%s = func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error) { return nil, errLeaf%s }\n", t, t)
	}
	vars.WriteString(")\n")
	src = append(src, vars.String()...)

	out, err := format.Source(src)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// noInputFromContext fails when a Go file of dir that gqlgen did not write
// calls graphql.UnmarshalInputFromContext, which needs the unmarshalers'
// map.
func noInputFromContext(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if base := filepath.Base(f); base == "generated.go" || base == "models_gen.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("UnmarshalInputFromContext")) {
			return fmt.Errorf("%s calls UnmarshalInputFromContext: Exec's input unmarshalers are needed", f)
		}
	}
	return nil
}
