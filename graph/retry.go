package graph

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// RetryPolicy retries a failing node inside its superstep, as LangGraph's
// RetryPolicy does: the node runs again (its writes from the failed attempt
// dropped) after a wait growing by BackoffFactor, until it succeeds, fails
// with an error RetryOn refuses, or has made MaxAttempts attempts; then its
// last error fails the step as usual. Zero fields take the defaults.
type RetryPolicy struct {
	// InitialInterval is the wait before the first retry; default 500ms.
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each retry; default 2.
	BackoffFactor float64
	// MaxInterval caps the wait; default 128s.
	MaxInterval time.Duration
	// MaxAttempts counts the attempts, the first included; default 3.
	MaxAttempts int
	// NoJitter turns off the random 0-1 s LangGraph adds to each wait
	// (capped at MaxInterval).
	NoJitter bool
	// RetryOn tells which errors are retried; default DefaultRetryOn. An
	// interrupt, a Command for the parent graph and the end of the run are
	// never retried.
	RetryOn func(error) bool
}

// Retry policy defaults (LangGraph's RetryPolicy defaults).
const (
	RetryInitialIntervalDefault = 500 * time.Millisecond
	RetryBackoffFactorDefault   = 2.0
	RetryMaxIntervalDefault     = 128 * time.Second
	RetryMaxAttemptsDefault     = 3
)

// WithRetry retries the node when it fails, by the first of policies whose
// RetryOn accepts the error.
func WithRetry(policies ...RetryPolicy) NodeOption {
	return func(n *node) { n.retry = append(n.retry, policies...) }
}

// notRetried are the error names DefaultRetryOn refuses: LangGraph's
// default_retry_on refuses these Python exceptions (programming errors,
// which another attempt would not fix); a Go panic is one too.
var notRetried = []string{"ValueError", "TypeError", "ArithmeticError", "ImportError", "LookupError", "NameError",
	"SyntaxError", "RuntimeError", "ReferenceError", "StopIteration", "StopAsyncIteration", "OSError", "PanicError"}

// DefaultRetryOn is the default RetryPolicy.RetryOn, after LangGraph's
// default_retry_on: it retries any error but a context's end and errors
// named (ErrorName) as a programming error: ValueError, TypeError,
// ArithmeticError, ImportError, LookupError, NameError, SyntaxError,
// RuntimeError, ReferenceError, StopIteration, StopAsyncIteration, OSError,
// and PanicError (a node that panicked).
func DefaultRetryOn(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var named interface{ ErrorName() string }
	if errors.As(err, &named) && slices.Contains(notRetried, named.ErrorName()) {
		return false
	}
	return true
}

// retryFor returns the policy retrying err after attempt attempts, and the
// wait before the next; nil when err is not retried.
func (n *node) retryFor(err error, attempt int) (*RetryPolicy, time.Duration) {
	for i := range n.retry {
		p := n.retry[i]
		on := p.RetryOn
		if on == nil {
			on = DefaultRetryOn
		}
		if !on(err) {
			continue
		}
		if attempt >= cmpOr(p.MaxAttempts, RetryMaxAttemptsDefault) {
			return nil, 0
		}
		initial := cmpOr(p.InitialInterval, RetryInitialIntervalDefault)
		factor := p.BackoffFactor
		if factor == 0 {
			factor = RetryBackoffFactorDefault
		}
		maxWait := cmpOr(p.MaxInterval, RetryMaxIntervalDefault)
		wait := time.Duration(math.Min(float64(maxWait), float64(initial)*math.Pow(factor, float64(attempt-1))))
		if !p.NoJitter {
			wait = min(maxWait, wait+time.Duration(rand.Int64N(int64(time.Second))))
		}
		return &p, wait
	}
	return nil, 0
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
