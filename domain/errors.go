package domain

import (
	"errors"
	"fmt"
)

// The kinds of failure the core reports. Every error the core returns wraps
// one of them, and the HTTP layer maps each kind to one status code.
var (
	// ErrInvalid: the caller sent something that breaks a domain rule.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: the thing asked for does not exist (or has no rides).
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: a dependency (queue, store) cannot take work right
	// now; the caller should retry later. Nothing was accepted.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrOverloaded: the service is shedding load on purpose (rate limit);
	// the caller should slow down. Nothing was accepted.
	ErrOverloaded = errors.New("too many requests")
)

// Error is a domain error with a message meant for a person: it says what
// was wrong and, where it can, what would be right.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Invalid returns an ErrInvalid with a formatted message.
func Invalid(format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// NotFound returns an ErrNotFound with a formatted message.
func NotFound(format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}

// Unavailable returns an ErrUnavailable with a formatted message.
func Unavailable(format string, args ...any) error {
	return &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf(format, args...)}
}

// Overloaded returns an ErrOverloaded with a formatted message.
func Overloaded(format string, args ...any) error {
	return &Error{Kind: ErrOverloaded, Msg: fmt.Sprintf(format, args...)}
}
