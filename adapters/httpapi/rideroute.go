package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/skidata/skidata/ports"
)

// rideRoute serves POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID},
// the route called at the rate of a resort's lifts, for the request every
// client sends: both ids within 32 bits, no Content-Encoding, a body of
// declared length that is the plain {"time":T,"liftID":L} object. It reads
// the ids with strconv and the body once, where the generated route binds
// each parameter by reflection, reads the body for the strict check
// (strictBodies) and decodes it again with encoding/json: in a profile at
// 8,000 POSTs/s that was a quarter of the allocations a POST made.
//
// Every other request goes to the generated route as it came (its body,
// if read, handed on unchanged), so the answers, errors included, are the
// generated route's: TestTheRideRouteAnswersAsTheGeneratedRoute and its
// fuzz target hold the two to it.
type rideRoute struct {
	handlers  *Handlers
	generated http.Handler
	errs      errorWriter
}

func (rr rideRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resort, rerr := strconv.ParseInt(r.PathValue("resortID"), 10, 32)
	skier, serr := strconv.ParseInt(r.PathValue("skierID"), 10, 32)
	if rerr != nil || serr != nil || r.ContentLength <= 0 || r.Header["Content-Encoding"] != nil {
		rr.generated.ServeHTTP(w, r)
		return
	}
	body, err := readBody(r)
	if err != nil {
		rr.errs.requestError(w, r, err) // as strictBodies answers it
		return
	}
	t, lift, ok := scanRide(body)
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		rr.generated.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	if rr.handlers.ClientAddress != nil { // as clientOfRide does
		ctx = ports.WithClient(ctx, rr.handlers.ClientAddress(r))
	}
	resp, err := rr.handlers.WriteNewLiftRide(ctx, WriteNewLiftRideRequestObject{
		ResortID: int32(resort), SeasonID: r.PathValue("seasonID"), DayID: r.PathValue("dayID"), SkierID: int32(skier),
		Body: &LiftRide{Time: &t, LiftID: &lift},
	})
	if err == nil {
		err = resp.VisitWriteNewLiftRideResponse(w)
	}
	if err != nil {
		rr.errs.responseError(w, r, err)
	}
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
