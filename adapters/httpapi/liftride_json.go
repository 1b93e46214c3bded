package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
)

// UnmarshalJSON decodes a ride's body. The generated handler decodes every
// POSTed ride with encoding/json, whose reflection was about 6% of the
// POST's CPU in a profile at 8,000 rides/s; the body every client sends, one
// flat object of the two integer fields, is read here directly, and
// anything else (null, other spellings, fractions, exponents, numbers out
// of range, strings) is left to encoding/json, so the result and its
// errors are exactly what they were.
func (l *LiftRide) UnmarshalJSON(b []byte) error {
	if t, lift, ok := scanRide(b); ok {
		l.Time, l.LiftID = &t, &lift
		return nil
	}
	type withoutThisMethod LiftRide
	err := json.Unmarshal(b, (*withoutThisMethod)(l))
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) { // name the type as encoding/json would have
		if typeErr.Struct == "withoutThisMethod" {
			typeErr.Struct = "LiftRide"
		}
		if typeErr.Type == reflect.TypeFor[withoutThisMethod]() {
			typeErr.Type = reflect.TypeFor[LiftRide]()
		}
	}
	return err
}

// scanRide reads {"time":T,"liftID":L} (either order, JSON white space
// anywhere between tokens), T and L integers in int32's range written as
// JSON writes them. ok is false for every other body.
func scanRide(b []byte) (t, lift int32, ok bool) {
	var seenTime, seenLift bool
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	for _, closer := range []byte{',', '}'} {
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		end := i + 1
		for end < len(b) && isNameByte(b[end]) {
			end++
		}
		if end >= len(b) || b[end] != '"' {
			return 0, 0, false
		}
		name := string(b[i+1 : end]) // no allocation: compared, not kept
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		v, next, vok := scanInt32(b, skipSpace(b, i+1))
		if !vok {
			return 0, 0, false
		}
		switch {
		case name == "time" && !seenTime:
			t, seenTime = v, true
		case name == "liftID" && !seenLift:
			lift, seenLift = v, true
		default:
			return 0, 0, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != closer {
			return 0, 0, false // the first field is followed by a comma, the second ends the object
		}
	}
	return t, lift, skipSpace(b, i+1) == len(b)
}

// scanInt32 reads a JSON integer at b[i:]: an optional minus, then 0 or a
// digit 1-9 followed by digits, not followed by a fraction or exponent,
// within int32's range. next is the index after it.
func scanInt32(b []byte, i int) (v int32, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		if n > 1<<31 {
			return 0, 0, false
		}
		i++
	}
	switch {
	case i == start, i-start > 1 && b[start] == '0':
		return 0, 0, false
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 || n < -1<<31 {
		return 0, 0, false
	}
	return int32(n), i, true
}
