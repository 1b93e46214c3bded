package sqs

import (
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// MaxRideLine is the longest line of a ride in a body.
const MaxRideLine = maxRideLine

// EncodeBody and DecodeBody are the message body codec.
func EncodeBody(rides []domain.LiftRide) string { return encodeBody(rides) }

func DecodeBody(body string) ([]domain.LiftRide, error) { return decodeBody(body) }

// CountRequest records one answered request as the client middleware does
// (op, the bytes of messages it sent, its output) on fresh counters and
// returns them.
func CountRequest(op string, sent int, result any) Requests {
	c := requestCounters{metrics: ports.NopMetrics{}}
	c.count(op, sent, result)
	return c.snapshot()
}
