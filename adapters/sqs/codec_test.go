package sqs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/queuetest"
)

// widest is a ride whose every field is at its longest in decimal.
var widest = domain.MustLiftRide(1<<31-1, "9999", domain.MaxDay, 1<<31-1, domain.MaxTime, domain.MaxLiftID)

func TestBodyRoundTripsTheRidesInOrder(t *testing.T) {
	rides := append(queuetest.Rides(50, 1), widest)
	got, err := sqs.DecodeBody(sqs.EncodeBody(rides))
	if err != nil {
		t.Fatalf("DecodeBody(EncodeBody(rides)): %v", err)
	}
	if !slices.Equal(got, rides) {
		t.Errorf("decoded %v; want the encoded %v", got, rides)
	}
}

func TestMaxRideLineIsTheWidestRidesLine(t *testing.T) {
	if got := len(widest.Key()) + 1; got != sqs.MaxRideLine {
		t.Errorf("the widest ride's line is %d bytes; maxRideLine says %d", got, sqs.MaxRideLine)
	}
}

// TestMaxRidesPerMessageFillsOneBillingChunk: a message of
// MaxRidesPerMessage of the widest rides bills one request unit, and one
// ride more would bill two.
func TestMaxRidesPerMessageFillsOneBillingChunk(t *testing.T) {
	rides := make([]domain.LiftRide, sqs.MaxRidesPerMessage+1)
	for i := range rides {
		rides[i] = widest
	}
	if n := len(sqs.EncodeBody(rides[:sqs.MaxRidesPerMessage])); n > sqs.BillingChunk {
		t.Errorf("a message of %d of the widest rides is %d bytes; want at most one billing chunk, %d", sqs.MaxRidesPerMessage, n, sqs.BillingChunk)
	}
	if n := len(sqs.EncodeBody(rides)); n <= sqs.BillingChunk {
		t.Errorf("a message of %d of the widest rides is %d bytes, within one billing chunk: MaxRidesPerMessage could be larger", len(rides), n)
	}
}

func TestUnreadableBodiesAreRefused(t *testing.T) {
	for _, body := range []string{
		"",
		`{"not":"a ride"}`,
		"skidata.rides.v1\n",
		"skidata.rides.v2\n1/2024/1/1/1/1\n",
		"skidata.rides.v1\n1/2024/1/1/1\n",
		"skidata.rides.v1\n1/2024/1/x/1/1\n",
		"skidata.rides.v1\n1/2024/1/1/1/0\n", // lift 0: an invalid ride
		"skidata.rides.v1\n1/2024/1/1/1/1\n1/2024/1/1/1\n", // a good ride, then a bad one
		"skidata.rides.v1\n1/2024/1/99999999999/1/1\n",     // beyond int32
		"skidata.rides.v1\n1/24/1/1/1/1\n",                 // not a season
		"skidata.rides.v1\n1/2024/0/1/1/1\n",               // no day 0
		"skidata.rides.v1\n1/2024/367/1/1/1\n",             // nor 367
		"skidata.rides.v1\n1/2024/one/1/1/1\n",             // a day is a number
	} {
		if rides, err := sqs.DecodeBody(body); err == nil {
			t.Errorf("DecodeBody(%q) = %v, nil; want an error", body, rides)
		}
	}
	if _, err := sqs.DecodeBody("skidata.rides.v1\n1/2024/1/1/1/1"); err != nil {
		t.Errorf("a body without its last newline: %v; want it read", err)
	}
	if !strings.HasPrefix(sqs.EncodeBody(queuetest.Rides(1, 1)), "skidata.rides.v1\n") {
		t.Error("a body does not start with its format line")
	}
}
