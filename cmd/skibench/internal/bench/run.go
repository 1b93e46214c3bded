package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/cmd/internal/cpuclock"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Target is one store under test, as OpenTarget wires it.
type Target struct {
	Name  string
	Store ports.RideStore
	// Count is what the store holds at the end: rows for postgres, items
	// for DynamoDB, distinct rides for memory.
	Count func(ctx context.Context) (int64, error)
	// CountUnit names what Count counts ("rows", "items", "rides").
	CountUnit string
	// Capacity is the DynamoDB stores' request and unit counters; nil for
	// the others.
	Capacity dynamo.Capacity
	// Partitions is the write accounting per partition key value of the
	// DynamoDB store's tables and indexes (its proxy's); nil for the
	// others. dynalite bills no index writes; the proxy does.
	Partitions func() []dynamosim.PartitionUsage
	// Settle, when set, runs after the load and before the queries: it
	// brings the store to the state a deployment's background work keeps
	// it in, so that the queries are timed as a deployment would answer
	// them, not as a freshly loaded store would. Its time and CPU count
	// in neither the load's figures nor the queries'.
	Settle func(ctx context.Context) error
	// Close releases the store (drops the schema or tables unless kept).
	Close func(ctx context.Context) error
	// ServerProcess names the server's processes on this machine
	// ("postgres"), whose CPU Run measures from /proc; "" for none.
	ServerProcess string
}

// LoadOptions is how rides are written: BatchSize rides per AddRides call,
// Writers calls in flight, as the persister does.
type LoadOptions struct {
	BatchSize int
	Writers   int
}

// Latency summarises one query kind's latencies.
type Latency struct {
	N     int     `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

// Result is one store's numbers.
type Result struct {
	Store        string  `json:"store"`
	Rides        int     `json:"rides"`
	WriteSeconds float64 `json:"write_seconds"`
	RidesPerSec  float64 `json:"rides_per_second"`
	// PortCalls counts the calls made through the port: AddRides batches
	// and queries.
	WriteCalls int `json:"write_calls"`
	ReadCalls  int `json:"read_calls"`
	// DynamoDB only (zero otherwise): requests sent, write units of the
	// tables and of the indexes as the proxy accounts them (dynalite
	// reports the table's only), read units reported for the query mix.
	Dynamo         bool    `json:"dynamo"`
	WriteRequests  int64   `json:"write_requests,omitempty"`
	ReadRequests   int64   `json:"read_requests,omitempty"`
	WriteCU        float64 `json:"write_cu,omitempty"`
	GSIWriteCU     float64 `json:"gsi_write_cu,omitempty"`
	TotalWriteCU   float64 `json:"total_write_cu,omitempty"`
	ReadCU         float64 `json:"read_cu,omitempty"`
	WriteCUPerRide float64 `json:"write_cu_per_ride,omitempty"`
	ReadCUPerQuery float64 `json:"read_cu_per_query,omitempty"`
	// HotKey is the partition key value (of a table or index) that took
	// the most write units, HotShare its share of all the write units, and
	// ThrottleRideRate the rides a second (in this data set's mix) at
	// which it would reach AWS's 1,000 WCU/s for one partition.
	HotKey           string  `json:"hot_key,omitempty"`
	HotShare         float64 `json:"hot_share,omitempty"`
	ThrottleRideRate float64 `json:"throttle_ride_rate,omitempty"`
	// HotUnitsPerRide is the hottest key's write units a ride of the data
	// set (so 1,000 / HotUnitsPerRide is ThrottleRideRate).
	HotUnitsPerRide float64 `json:"hot_units_per_ride,omitempty"`
	// WriteUnitsBy is the write units a ride on each table and index
	// ("skierTable", "skierTable/resort-index"; without the run's prefix):
	// AWS's table-level quota applies to each separately.
	WriteUnitsBy map[string]float64 `json:"write_units_per_ride_by,omitempty"`
	// ReadUnitsByKind is the read units a query of each kind.
	ReadUnitsByKind map[string]float64 `json:"read_units_per_query_by_kind,omitempty"`
	// ServerCPUPerRideUS and ServerCPUPerQueryUS are the CPU microseconds
	// the server's processes on this machine (Target.ServerProcess) used
	// per ride during the load and per query during the mix, read from
	// /proc: everything those processes did meanwhile, this run's or not.
	// ClientCPUPerRideUS is skibench's own CPU per ride during the load
	// (the adapter's side: encoding, the driver).
	// A figure the server's processes were found for but whose CPU
	// difference spanned too few of /proc's ticks is left out, and
	// ServerCPUPerRideNot or ServerCPUPerQueryNot says so
	// (cpuclock.Check).
	ServerCPUPerRideUS   float64 `json:"server_cpu_us_per_ride,omitempty"`
	ServerCPUPerQueryUS  float64 `json:"server_cpu_us_per_query,omitempty"`
	ServerCPUPerRideNot  string  `json:"server_cpu_per_ride_not_measured,omitempty"`
	ServerCPUPerQueryNot string  `json:"server_cpu_per_query_not_measured,omitempty"`
	ClientCPUPerRideUS   float64 `json:"client_cpu_us_per_ride,omitempty"`
	// Throttled counts the requests the throughput model refused (with
	// --throughput-model).
	Throttled  int64  `json:"throttled,omitempty"`
	Stored     int64  `json:"stored"`
	StoredUnit string `json:"stored_unit"`
	// Latencies per query kind.
	Latencies map[string]Latency `json:"latencies"`
	// Mismatches counts the queries whose answer differs from the memory
	// reference's; Mismatched holds the first few for the report.
	Mismatches int      `json:"mismatches"`
	Mismatched []string `json:"mismatched,omitempty"`
}

// partitionStats sums the write accounting: table and index units, and
// the hottest partition key value.
func partitionStats(parts []dynamosim.PartitionUsage) (table, index float64, hot dynamosim.PartitionUsage, throttled int64) {
	for _, p := range parts {
		if p.Index == "" {
			table += p.WriteUnits
		} else {
			index += p.WriteUnits
		}
		if p.WriteUnits > hot.WriteUnits {
			hot = p
		}
		throttled += p.Throttled
	}
	return table, index, hot, throttled
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of the
// sorted durations, in milliseconds; 0 for none.
func Percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return float64(sorted[rank-1]) / float64(time.Millisecond)
}

// Load writes the rides in batches with opts.Writers callers at once and
// returns how long it took.
func Load(ctx context.Context, s ports.RideStore, rides []domain.LiftRide, opts LoadOptions) (time.Duration, int, error) {
	batches := slices.Collect(slices.Chunk(rides, max(opts.BatchSize, 1)))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan []domain.LiftRide)
	var wg sync.WaitGroup
	start := time.Now()
	for range max(opts.Writers, 1) {
		wg.Go(func() {
			for b := range next {
				if err := s.AddRides(ctx, b); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
feed:
	for _, b := range batches {
		select {
		case next <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return elapsed, len(batches), fmt.Errorf("load: %w", err)
	}
	return elapsed, len(batches), nil
}

// Run loads the rides into the target, asks it every query (one at a time,
// so latency is the store's, not a queue's), compares the answers with
// want (the reference's, one per query) and collects the numbers.
func Run(ctx context.Context, t *Target, rides []domain.LiftRide, queries []Query, want []string, opts LoadOptions) (Result, error) {
	res := Result{Store: t.Name, Rides: len(rides), StoredUnit: t.CountUnit, Latencies: map[string]Latency{}, Dynamo: t.Capacity != nil}
	server0, serverOK := processCPU(t.ServerProcess)
	client0 := selfCPU()
	elapsed, calls, err := Load(ctx, t.Store, rides, opts)
	if err != nil {
		return res, fmt.Errorf("%s: %w", t.Name, err)
	}
	server1, _ := processCPU(t.ServerProcess)
	if t.ServerProcess != "" && len(rides) > 0 {
		res.ClientCPUPerRideUS = micros(selfCPU()-client0) / float64(len(rides))
		if serverOK {
			if err := cpuclock.Check(server1 - server0); err != nil {
				res.ServerCPUPerRideNot = fmt.Sprintf("loading %d rides: %v", len(rides), err)
			} else {
				res.ServerCPUPerRideUS = micros(server1-server0) / float64(len(rides))
			}
		}
	}
	res.WriteSeconds = elapsed.Seconds()
	res.RidesPerSec = float64(len(rides)) / elapsed.Seconds()
	res.WriteCalls = calls
	if t.Settle != nil {
		if err := t.Settle(ctx); err != nil {
			return res, fmt.Errorf("%s: settle after the load: %w", t.Name, err)
		}
		server1, _ = processCPU(t.ServerProcess)
	}

	perKind := map[string][]time.Duration{}
	for i, q := range queries {
		start := time.Now()
		got, err := Ask(ctx, t.Store, q)
		d := time.Since(start)
		if err != nil {
			return res, fmt.Errorf("%s: %w", t.Name, err)
		}
		perKind[q.Kind] = append(perKind[q.Kind], d)
		if i < len(want) && got != want[i] {
			res.Mismatches++
			if len(res.Mismatched) < 5 {
				res.Mismatched = append(res.Mismatched, fmt.Sprintf("%s%+v: got %s, want %s", q.Kind, q, got, want[i]))
			}
		}
	}
	res.ReadCalls = len(queries)
	if server2, ok := processCPU(t.ServerProcess); ok && serverOK && len(queries) > 0 {
		if err := cpuclock.Check(server2 - server1); err != nil {
			res.ServerCPUPerQueryNot = fmt.Sprintf("asking %d queries: %v", len(queries), err)
		} else {
			res.ServerCPUPerQueryUS = micros(server2-server1) / float64(len(queries))
		}
	}
	for kind, ds := range perKind {
		slices.Sort(ds)
		res.Latencies[kind] = Latency{N: len(ds), P50ms: Percentile(ds, 50), P99ms: Percentile(ds, 99)}
	}

	if t.Count != nil {
		if res.Stored, err = t.Count(ctx); err != nil {
			return res, fmt.Errorf("%s: count: %w", t.Name, err)
		}
	} else {
		res.Stored = int64(distinct(rides))
	}
	if t.Capacity != nil {
		// Count's Scan is counted by the store under CountItems: it is
		// the benchmark's, not the query mix's, so it is left out.
		for op, st := range t.Capacity.Stats() {
			switch op {
			case "AddRides":
				res.WriteRequests += st.Requests
				res.WriteCU += st.WriteCU
			case "CountItems":
			default:
				res.ReadRequests += st.Requests
				res.ReadCU += st.ReadCU
				if n := len(perKind[op]); n > 0 {
					if res.ReadUnitsByKind == nil {
						res.ReadUnitsByKind = map[string]float64{}
					}
					res.ReadUnitsByKind[op] = st.ReadCU / float64(n)
				}
			}
		}
	}
	if t.Partitions != nil {
		parts := t.Partitions()
		table, index, hot, throttled := partitionStats(parts)
		res.GSIWriteCU = index
		res.TotalWriteCU = table + index
		res.Throttled = throttled
		if res.TotalWriteCU > 0 {
			res.HotShare = hot.WriteUnits / res.TotalWriteCU
			res.HotKey = hotName(hot)
			res.ThrottleRideRate = dynamosim.PartitionWriteUnits * float64(len(rides)) / hot.WriteUnits
		}
		if len(rides) > 0 {
			res.WriteCUPerRide = res.TotalWriteCU / float64(len(rides))
			res.HotUnitsPerRide = hot.WriteUnits / float64(len(rides))
			res.WriteUnitsBy = map[string]float64{}
			for _, p := range parts {
				res.WriteUnitsBy[tableName(p.PartitionKey)] += p.WriteUnits / float64(len(rides))
			}
		}
		if len(queries) > 0 {
			res.ReadCUPerQuery = res.ReadCU / float64(len(queries))
		}
	}
	return res, nil
}

// hotName names a partition key value without the run's table prefix.
func hotName(p dynamosim.PartitionUsage) string {
	return tableName(p.PartitionKey) + " " + p.Key
}

// tableName names a table ("skierTable") or one of its indexes
// ("skierTable/resort-index") without the run's table prefix.
func tableName(k dynamosim.PartitionKey) string {
	table := k.Table
	if i := strings.LastIndex(table, "_"); i >= 0 {
		table = table[i+1:]
	}
	if k.Index != "" {
		table += "/" + k.Index
	}
	return table
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Reference answers the queries from the in-memory store loaded with the
// rides: the answers every other store must give.
func Reference(ctx context.Context, s ports.RideStore, rides []domain.LiftRide, queries []Query) ([]string, error) {
	if err := s.AddRides(ctx, rides); err != nil {
		return nil, fmt.Errorf("reference store: %w", err)
	}
	out := make([]string, len(queries))
	for i, q := range queries {
		a, err := Ask(ctx, s, q)
		if err != nil {
			return nil, fmt.Errorf("reference store: %w", err)
		}
		out[i] = a
	}
	return out, nil
}

func distinct(rides []domain.LiftRide) int {
	seen := make(map[domain.LiftRide]struct{}, len(rides))
	for _, r := range rides {
		seen[r] = struct{}{}
	}
	return len(seen)
}
