package resourceapi

import "context"

// Tracer is told of each call of the Service's record methods (List, Get,
// Create, Replace, Update, Delete) as it starts, with the method's and the
// resource's names, and returns the context the call runs in and the
// function to call with its error once it ends (package tracing: a span per
// call). It is a plain function so that the rule layer needs no tracing
// library.
type Tracer func(ctx context.Context, method, resource string) (context.Context, func(error))

// SetTracer sets the Tracer; nil (the default) traces nothing. Call it
// before the Service is used.
func (s *Service) SetTracer(t Tracer) { s.tracer = t }

// span starts the call of method on res with the Tracer, if any.
func (s *Service) span(ctx context.Context, method string, res *Resource) (context.Context, func(error)) {
	if s.tracer == nil {
		return ctx, noEnd
	}
	return s.tracer(ctx, method, res.Name)
}

func noEnd(error) {}
