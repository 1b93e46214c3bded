package dynamo

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// OpStats is what one adapter operation (AddRides, UniqueSkiers, ...) has
// cost so far: the DynamoDB requests it sent (every page of a Query counts)
// and the capacity units DynamoDB reported for them, index units included.
// Dynalite reports the base table's units only; see docs/dynamodb.md.
type OpStats struct {
	Requests int64
	ReadCU   float64
	WriteCU  float64
}

// Capacity is the counters' reader, for the benchmark.
type Capacity interface {
	Stats() map[string]OpStats
}

// milli is the counters' fixed point: DynamoDB reports units in halves
// (eventually consistent reads), so thousandths are exact and let the
// counters be plain atomics.
const milli = 1000

type opCounter struct {
	requests atomic.Int64
	readMilli,
	writeMilli atomic.Int64
}

type stats struct {
	ops sync.Map // op name -> *opCounter
}

func (s *stats) counter(op string) *opCounter {
	if c, ok := s.ops.Load(op); ok {
		return c.(*opCounter)
	}
	c, _ := s.ops.LoadOrStore(op, &opCounter{})
	return c.(*opCounter)
}

// record counts one request of op and the capacity it consumed, as read
// or write units depending on the request.
func (s *stats) record(op string, write bool, ccs ...types.ConsumedCapacity) {
	c := s.counter(op)
	c.requests.Add(1)
	var units float64
	for _, cc := range ccs {
		if cc.CapacityUnits != nil {
			units += *cc.CapacityUnits
		}
	}
	m := int64(math.Round(units * milli))
	if write {
		c.writeMilli.Add(m)
	} else {
		c.readMilli.Add(m)
	}
}

// Stats returns a snapshot of the counters per operation.
func (s *stats) Stats() map[string]OpStats {
	out := map[string]OpStats{}
	s.ops.Range(func(k, v any) bool {
		c := v.(*opCounter)
		out[k.(string)] = OpStats{
			Requests: c.requests.Load(),
			ReadCU:   float64(c.readMilli.Load()) / milli,
			WriteCU:  float64(c.writeMilli.Load()) / milli,
		}
		return true
	})
	return out
}
