package e2e

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/test/apitest"
)

// The end-to-end tests build their requests with the client generated from
// openapi.yaml, so a route or body the spec changes breaks them at compile
// time. Only what the spec does not have (/metrics, /debug/pprof, unknown
// routes) is spelled by hand.

// newRide builds the POST of one ride.
func newRide(base string, resort int32, season string, day, skier, time, lift int32) (*http.Request, error) {
	return httpapi.NewWriteNewLiftRideRequest(httpapi.ServerURL(base), resort, season, strconv.Itoa(int(day)), skier,
		httpapi.LiftRide{Time: &time, LiftID: &lift})
}

// sendRide POSTs the ride {"time":10,"liftID":3} of skier on day of season
// 2024 at resort.
func sendRide(t *testing.T, base string, resort, day, skier int) apitest.Response {
	t.Helper()
	return sendRideAt(t, base, resort, day, skier, 10, 3)
}

// sendRideAt is sendRide with the ride's time and lift.
func sendRideAt(t *testing.T, base string, resort, day, skier, time, lift int) apitest.Response {
	t.Helper()
	return apitest.Send(t, apitest.Req(newRide(base, int32(resort), "2024", int32(day), int32(skier), int32(time), int32(lift))))
}

// dayVertical GETs skier's vertical on day of season 2024 at resort.
func dayVertical(t *testing.T, base string, resort, day, skier int) apitest.Response {
	t.Helper()
	return apitest.Send(t, apitest.Req(httpapi.NewGetSkierDayVerticalRequest(httpapi.ServerURL(base), int32(resort), "2024", strconv.Itoa(day), int32(skier))))
}

// readyz GETs /readyz.
func readyz(t *testing.T, base string) apitest.Response {
	t.Helper()
	return apitest.Send(t, apitest.Req(httpapi.NewGetReadyzRequest(httpapi.ServerURL(base))))
}

// resortSkiers GETs the unique skiers of resort on day of season.
func resortSkiers(t *testing.T, base string, resort, season, day int32) apitest.Response {
	t.Helper()
	return apitest.Send(t, apitest.Req(httpapi.NewGetResortSkiersDayRequest(httpapi.ServerURL(base), resort, season, day)))
}
