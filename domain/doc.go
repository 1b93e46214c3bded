// Package domain holds skidata's core vocabulary: lift rides, resorts and
// seasons, the rules that make them valid, a ride's identity and its vertical,
// and the errors every layer speaks (ErrInvalid, ErrNotFound, ErrUnavailable).
//
// It imports only the standard library. Values are built through the New*
// and Parse* functions, so an invalid ride cannot exist past the HTTP
// boundary.
package domain
