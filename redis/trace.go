package redis

import (
	"context"
	"errors"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Trace reports every command client sends to trace, as it starts and once
// Redis has answered: trace receives the command's name in lower case
// ("evalsha", "xadd"), or "pipeline" and the names of its commands, and
// returns the context to run it in and the function to call with its
// error. redis.Nil (a key that is not there) is an answer, not an error.
// The arguments, which hold keys and event bodies, are never given to
// trace. Without Trace, commands cost nothing more.
//
// This is go-redis's own hook mechanism, the same one
// github.com/redis/go-redis/extra/redisotel uses; it is written here so
// that the spans follow the service's tracing (package tracing): only
// commands of a traced request or publication get one, never the
// background reads of the event stream.
func Trace(client *goredis.Client, trace func(ctx context.Context, command string) (context.Context, func(error))) {
	client.AddHook(traceHook{trace})
}

type traceHook struct {
	trace func(context.Context, string) (context.Context, func(error))
}

func (h traceHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h traceHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		ctx, end := h.trace(ctx, strings.ToLower(cmd.Name()))
		err := next(ctx, cmd)
		end(answered(err))
		return err
	}
}

func (h traceHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		var b strings.Builder
		b.WriteString("pipeline")
		for i, c := range cmds {
			if i == 5 {
				b.WriteString(" ...")
				break
			}
			b.WriteByte(' ')
			b.WriteString(strings.ToLower(c.Name()))
		}
		ctx, end := h.trace(ctx, b.String())
		err := next(ctx, cmds)
		end(answered(err))
		return err
	}
}

// answered drops the error that only says a key is absent.
func answered(err error) error {
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	return err
}

var _ goredis.Hook = traceHook{}
