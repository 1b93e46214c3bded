package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
)

// counterRides spans two skiers of one resort-day shard (1 and 33), a skier
// of another (2), two days and two resorts, several rides per skier-day.
func counterRides(t *testing.T) []domain.LiftRide {
	return []domain.LiftRide{
		mustRide(t, 1, "2024", 1, 1, 10, 1),
		mustRide(t, 1, "2024", 1, 1, 20, 2),
		mustRide(t, 1, "2024", 2, 1, 30, 3),
		mustRide(t, 1, "2024", 1, 2, 40, 4),
		mustRide(t, 1, "2024", 1, 33, 50, 5),
		mustRide(t, 1, "2024", 1, 33, 60, 5),
		mustRide(t, 2, "2024", 1, 33, 70, 6),
	}
}

// checkAggregates compares the counters with what the distinct rides say.
func checkAggregates(t *testing.T, s dynamo.Store, rides []domain.LiftRide) {
	t.Helper()
	ctx := dynamotest.Context(t)
	type rd struct {
		resort domain.ResortID
		day    domain.Day
	}
	type sd struct {
		resort domain.ResortID
		day    domain.Day
		skier  domain.SkierID
	}
	skiers := map[rd]map[domain.SkierID]bool{}
	vert := map[sd]int64{}
	seen := map[domain.LiftRide]bool{}
	for _, r := range rides {
		if seen[r] {
			continue
		}
		seen[r] = true
		k := rd{r.ResortID(), r.DayID()}
		if skiers[k] == nil {
			skiers[k] = map[domain.SkierID]bool{}
		}
		skiers[k][r.SkierID()] = true
		vert[sd{r.ResortID(), r.DayID(), r.SkierID()}] += int64(r.Vertical())
	}
	for k, set := range skiers {
		if n, err := s.UniqueSkiers(ctx, k.resort, domain.MustSeason("2024"), k.day); err != nil || n != len(set) {
			t.Errorf("UniqueSkiers(resort %d, day %s) = %d, %v; want %d", k.resort, k.day, n, err, len(set))
		}
	}
	for k, v := range vert {
		if got, err := s.SkierDayVertical(ctx, k.resort, domain.MustSeason("2024"), k.day, k.skier); err != nil || got != v {
			t.Errorf("SkierDayVertical(resort %d, day %s, skier %d) = %d, %v; want %d", k.resort, k.day, k.skier, got, err, v)
		}
	}
}

func TestCountersRedeliveredRideCountsOnce(t *testing.T) {
	t.Parallel()
	s := rideStore(t, dynamo.ModelCounters, nil)
	ctx := dynamotest.Context(t)
	rides := counterRides(t)
	if err := s.AddRides(ctx, rides); err != nil {
		t.Fatal(err)
	}
	for _, r := range rides { // each ride again, alone: no in-batch dedupe helps
		if err := s.AddRides(ctx, []domain.LiftRide{r}); err != nil {
			t.Fatalf("AddRides(redelivered %s): %v", r.Key(), err)
		}
	}
	checkAggregates(t, s, rides)
}

func TestCountersBatchWrittenTwiceCountsOnce(t *testing.T) {
	t.Parallel()
	s := rideStore(t, dynamo.ModelCounters, nil)
	ctx := dynamotest.Context(t)
	rides := counterRides(t)
	for range 2 {
		if err := s.AddRides(ctx, rides); err != nil {
			t.Fatal(err)
		}
	}
	// A batch overlapping the first in part: the group's condition fails
	// on the old ride and the new one must still be added.
	extra := mustRide(t, 1, "2024", 1, 1, 90, 7)
	if err := s.AddRides(ctx, []domain.LiftRide{rides[0], extra, rides[1]}); err != nil {
		t.Fatal(err)
	}
	checkAggregates(t, s, append(rides, extra))
}

func TestCountersConcurrentWritersCountOnce(t *testing.T) {
	t.Parallel()
	s := rideStore(t, dynamo.ModelCounters, nil)
	ctx := dynamotest.Context(t)
	var rides []domain.LiftRide
	for skier := int32(1); skier <= 40; skier++ {
		for tm := int32(1); tm <= 3; tm++ {
			rides = append(rides, mustRide(t, domain.ResortID(1+skier%2), "2024", 1, domain.SkierID(skier), tm, skier%10+1))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for w := range 6 {
		wg.Go(func() {
			// Every writer writes everything, in a different order.
			mine := append([]domain.LiftRide(nil), rides[w*7:]...)
			mine = append(mine, rides[:w*7]...)
			errs <- s.AddRides(ctx, mine)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkAggregates(t, s, rides)
}

// crashingAPI fails the n-th UpdateItem (counting from 1) as if the writer
// died there, then behaves.
type crashingAPI struct {
	dynamo.API
	n     int64
	calls atomic.Int64
}

var errCrash = errors.New("writer crashed here")

func (c *crashingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.calls.Add(1) == c.n {
		return nil, errCrash
	}
	return c.API.UpdateItem(ctx, in, o...)
}

// A writer may die after any of its updates: after the ride items, between
// a skier-day and its resort-day, or halfway through the resort-days. The
// redelivered batch must complete the counters, each exactly once.
func TestCountersCrashAtEveryStepThenRedeliveryCountsOnce(t *testing.T) {
	t.Parallel()
	rides := counterRides(t)
	// A clean run with one writer makes 5 skier-day and 4 resort-day updates.
	const updates = 9
	for n := int64(1); n <= updates; n++ {
		t.Run(fmt.Sprint("crash at update ", n), func(t *testing.T) {
			client := dynamotest.Client(t)
			cfg := newTables(t, client, dynamo.ModelCounters)
			cfg.WriteConcurrency = 1
			api := &crashingAPI{API: client, n: n}
			s, err := dynamo.NewRideStore(api, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := dynamotest.Context(t)
			if err := s.AddRides(ctx, rides); !errors.Is(err, errCrash) {
				t.Fatalf("first delivery = %v; want the injected crash", err)
			}
			if err := s.AddRides(ctx, rides); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			checkAggregates(t, s, rides)
			if got := api.calls.Load(); got < updates+1 {
				t.Errorf("%d UpdateItems in all; the crash at %d should have left work for the redelivery", got, n)
			}
		})
	}
}

func TestCountersTablesHaveNoIndex(t *testing.T) {
	defs, err := dynamo.TableDefinitions("p_", dynamo.ModelCounters)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, aws.ToString(d.TableName))
		if len(d.GlobalSecondaryIndexes) != 0 {
			t.Errorf("table %s has an index; the counters model needs none", aws.ToString(d.TableName))
		}
	}
	if got := strings.Join(names, ","); got != "p_skierTable,p_resortTable,p_resortDayTable" {
		t.Errorf("tables = %s", got)
	}
}
