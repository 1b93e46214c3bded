package dynamo_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/cenkalti/backoff/v5"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/dynamotest"
)

// countingMetrics records what the adapter reports through ports.Metrics.
type countingMetrics struct {
	ports.NopMetrics
	mu        sync.Mutex
	throttled map[string]int // table/operation -> count
	write     map[string]float64
}

func (m *countingMetrics) StoreThrottled(table, op string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.throttled[table+"/"+op]++
}

func (m *countingMetrics) AddCapacity(table, op string, read, write float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write[table+"/"+op] += write
}

func (m *countingMetrics) throttledOf(table, op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.throttled[table+"/"+op]
}

func (m *countingMetrics) totalThrottled() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.throttled {
		n += c
	}
	return n
}

func quickBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 10 * time.Millisecond
	b.MaxInterval = 200 * time.Millisecond
	return b
}

// A single-resort burst through the throughput model, with partitions
// allowed a few units a second so that throttling is certain: every ride
// is stored and counted once, each throttled request (and only it) is sent
// again, and every throttle is reported to the metrics. The SDK's own
// retries are off, so each throttle the proxy answers reaches the adapter.
func TestSingleResortBurstUnderThroughputModel(t *testing.T) {
	units := map[string]float64{
		// The adopted model's resort index takes every ride on one key.
		dynamo.ModelAdopted: 100,
		// The others have no key that hot: tighten the limit until their
		// skier partitions throttle.
		dynamo.ModelAbandoned: 5,
		dynamo.ModelCounters:  5,
		dynamo.ModelSharded:   5,
	}
	eachModel(t, func(t *testing.T, model string) {
		px := dynamotest.NewProxy(t, dynamosim.Options{Throughput: true, WriteUnits: units[model]})
		client := dynamosim.ClientFor(px.URL, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		cfg := newTables(t, client, model)
		m := &countingMetrics{throttled: map[string]int{}, write: map[string]float64{}}
		cfg.Metrics, cfg.NewBackOff = m, quickBackOff
		s, err := dynamo.NewRideStore(client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := dynamotest.Context(t)
		const skiers, perSkier = 30, 20
		var rides []domain.LiftRide
		for i := range perSkier {
			for sk := int32(1); sk <= skiers; sk++ {
				rides = append(rides, mustRide(t, 3, "2025", 40, domain.SkierID(sk), int32(100+i), 1+sk%5))
			}
		}
		if err := s.AddRides(ctx, rides); err != nil {
			t.Fatalf("AddRides of a one-resort burst under throttling: %v", err)
		}
		if px.Throttled() == 0 {
			t.Fatalf("no request was throttled at %v units/s: the test shows nothing", units[model])
		}
		if got, want := m.totalThrottled(), int(px.Throttled()); got != want {
			t.Errorf("throttles reported to metrics = %d; the proxy throttled %d", got, want)
		}
		// Nothing lost, nothing counted twice.
		if n, err := s.UniqueSkiers(ctx, 3, domain.MustSeason("2025"), domain.MustDay(40)); err != nil || n != skiers {
			t.Errorf("UniqueSkiers = %d, %v; want %d", n, err, skiers)
		}
		for sk := domain.SkierID(1); sk <= skiers; sk++ {
			var want int64
			for _, r := range rides {
				if r.SkierID() == sk {
					want += int64(r.Vertical())
				}
			}
			if v, err := s.SkierDayVertical(ctx, 3, domain.MustSeason("2025"), domain.MustDay(40), sk); err != nil || v != want {
				t.Errorf("skier %d vertical = %d, %v; want %d", sk, v, err, want)
			}
		}
		// Only throttled requests were sent again: each ride item was
		// written to its table partition exactly once (models with one
		// item a ride), i.e. no batch was resent whole.
		if model == dynamo.ModelAdopted || model == dynamo.ModelSharded {
			var writes int64
			for _, p := range px.Partitions() {
				if p.Table == cfg.TablePrefix+dynamo.SkierTableName && p.Index == "" {
					writes += p.Writes
				}
			}
			if writes != int64(len(rides)) {
				t.Errorf("ride items written = %d; want each of the %d once", writes, len(rides))
			}
		}
		if m.write[fmt.Sprintf("%s%s/AddRides", cfg.TablePrefix, dynamo.SkierTableName)] == 0 {
			t.Errorf("no write capacity reported for the skier table: %v", m.write)
		}
	})
}

// Reads through the throughput model with partitions serving 2 read units a
// second and pages of one item, so that a skier's partition throttles
// after two pages: every Query page and GetItem DynamoDB throttles is sent
// again with backoff, as writes are, and the answers are whole. The SDK's
// own retries are off, so each throttle reaches the adapter.
func TestThrottledReadsAreRetried(t *testing.T) {
	eachModel(t, func(t *testing.T, model string) {
		px := dynamotest.NewProxy(t, dynamosim.Options{Throughput: true, ReadUnits: 2})
		client := dynamosim.ClientFor(px.URL, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		cfg := newTables(t, client, model)
		m := &countingMetrics{throttled: map[string]int{}, write: map[string]float64{}}
		cfg.Metrics, cfg.NewBackOff, cfg.PageLimit = m, quickBackOff, 1
		s, err := dynamo.NewRideStore(client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := dynamotest.Context(t)
		var rides []domain.LiftRide
		for day := 1; day <= 4; day++ {
			rides = append(rides, mustRide(t, 3, "2025", day, 5, 100, 2))
		}
		if err := s.AddRides(ctx, rides); err != nil {
			t.Fatal(err)
		}
		if days, err := s.SkierDays(ctx, 5, domain.MustSeason("2025")); err != nil || !slices.Equal(days, dayList(1, 2, 3, 4)) {
			t.Errorf("SkierDays under read throttling = %v, %v; want [1 2 3 4]", days, err)
		}
		for range 3 { // back to back: the partition has no unit left for the next
			if v, err := s.SkierDayVertical(ctx, 3, domain.MustSeason("2025"), domain.MustDay(2), 5); err != nil || v != 20 {
				t.Errorf("SkierDayVertical under read throttling = %d, %v; want 20", v, err)
			}
		}
		skierTable := cfg.TablePrefix + dynamo.SkierTableName
		if m.throttledOf(skierTable, "Query") == 0 {
			t.Errorf("no Query of %s was throttled (%v): the test shows nothing", skierTable, m.throttled)
		}
		if got, want := m.totalThrottled(), int(px.Throttled()); got != want {
			t.Errorf("throttles reported to metrics = %d; the proxy throttled %d", got, want)
		}
	})
}
