package nri

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errTooSlow: the work of a request did not finish before the plugin had
// to answer the runtime (answerWithin).
var errTooSlow = errors.New("the check or registration did not finish in time to answer the runtime")

// DefaultAnswerWithin is how long a handler works before it answers when
// the request carries no deadline: under containerd's and CRI-O's
// default plugin_request_timeout (2 s).
var DefaultAnswerWithin = 1500 * time.Millisecond

// answerWithin is how long a handler may work on a request with ctx:
// three quarters of the time left before ctx's deadline (the runtime's
// plugin_request_timeout, which ttrpc carries), else
// DefaultAnswerWithin.
func answerWithin(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl)*3/4, 0)
	}
	return DefaultAnswerWithin
}

// bounded runs f and returns its error, or an error wrapping errTooSlow
// once answerWithin(ctx) has passed; f then goes on in the background
// (the registry has no cancellation) and its result is dropped. A
// runtime whose nri predates v0.12.4 (containerd 2.4.2 embeds v0.12.3)
// takes a request that outlives its timeout as the plugin's failure:
// it closes the plugin and runs the container unchecked. Answering with
// a refusal before the deadline keeps a slow check (which a pod's author
// can cause: a large shell=none entrypoint, many PATH candidates) from
// becoming an unconfined container.
func bounded(ctx context.Context, f func() error) error {
	d := answerWithin(ctx)
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return refuse("timeout", fmt.Errorf("%w (after %v; the runtime's deadline is near): the container is refused", errTooSlow, d.Round(time.Millisecond)))
	}
}
