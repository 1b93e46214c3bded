package app

import "errors"

// ErrUsage marks an error in how a one-shot command was asked for (a flag
// that does not fit it), as opposed to a failure while doing it; skiapi
// exits 2 for the first and 1 for the second.
var ErrUsage = errors.New("usage")

// usage marks err as a usage error without changing its message.
func usage(err error) error { return usageError{err} }

type usageError struct{ err error }

func (u usageError) Error() string   { return u.err.Error() }
func (u usageError) Unwrap() []error { return []error{ErrUsage, u.err} }
