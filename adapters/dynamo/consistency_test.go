package dynamo_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
)

// readLag is the read-lag model's delay in these tests: every read the
// adapter does not make consistently sees the tables as they were readLag
// ago. Long against a request on a loaded machine (a read within it of a
// write must miss the write), short enough to poll past.
const readLag = 2 * time.Second

// What AWS promises a read right after a write, per model (docs/dynamodb.md,
// "Read consistency"): the adapter reads every table consistently, so once
// AddRides has returned every skier query, and the counters' and sharded
// models' UniqueSkiers, see its rides at once; the adopted and abandoned
// models' UniqueSkiers read the resort index, which cannot be read
// consistently, and see them only once the index has caught up.

func TestReadsRightAfterAWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		model      string
		uniqueLags bool
	}{
		{"AdoptedSkierQueriesAtOnceUniqueSkiersAfterTheIndexLag", dynamo.ModelAdopted, true},
		{"AbandonedSkierQueriesAtOnceUniqueSkiersAfterTheIndexLag", dynamo.ModelAbandoned, true},
		{"CountersAllQueriesAtOnce", dynamo.ModelCounters, false},
		{"ShardedAllQueriesAtOnce", dynamo.ModelSharded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			readsAfterWrites(t, tc.model, tc.uniqueLags)
		})
	}
}

// readsAfterWrites writes two batches through the read-lag model (the
// second adds to a skier-day of the first, so the abandoned and counters
// models update items rather than create them) and, right after each
// AddRides returns, checks every query. uniqueLags says UniqueSkiers reads
// an index: then right after the write it must still give the count from
// before it, and the new count only once the lag has passed.
func readsAfterWrites(t *testing.T, model string, uniqueLags bool) {
	px := dynamotest.NewProxy(t, dynamosim.Options{Lag: readLag})
	client := dynamosim.ClientFor(px.URL)
	s, err := dynamo.NewRideStore(client, newTables(t, client, model))
	if err != nil {
		t.Fatal(err)
	}
	ctx := dynamotest.Context(t)
	const resort = 3
	r1 := mustRide(t, resort, "2025", 7, 11, 100, 2)
	r2 := mustRide(t, resort, "2025", 7, 11, 200, 5)
	r3 := mustRide(t, resort, "2025", 7, 12, 150, 3)
	r4 := mustRide(t, resort, "2025", 7, 11, 300, 4)
	r5 := mustRide(t, resort, "2025", 7, 13, 120, 1)
	season, day := r1.SeasonID(), r1.DayID()

	step := func(batch []domain.LiftRide, uniqueBefore, uniqueAfter int, skier11 []domain.LiftRide) {
		t.Helper()
		start := time.Now()
		if err := s.AddRides(ctx, batch); err != nil {
			t.Fatal(err)
		}
		// First, while within the lag of the write: UniqueSkiers.
		n, err := s.UniqueSkiers(ctx, resort, season, day)
		if err != nil {
			t.Fatal(err)
		}
		if uniqueLags {
			dynamotest.WithinLag(t, start, readLag)
			if n != uniqueBefore {
				t.Errorf("UniqueSkiers right after AddRides = %d; want %d, the count before the write (the index lags)", n, uniqueBefore)
			}
		} else if n != uniqueAfter {
			t.Errorf("UniqueSkiers right after AddRides = %d; want %d at once (a consistent read)", n, uniqueAfter)
		}
		// The skier queries read the table consistently: at once.
		var vert int64
		for _, r := range skier11 {
			vert += int64(r.Vertical())
		}
		if got, err := s.SkierDayRides(ctx, 11, season, day); err != nil || !slices.Equal(got, skier11) {
			t.Errorf("SkierDayRides right after AddRides = %v, %v; want %v", got, err, skier11)
		}
		if got, err := s.SkierDays(ctx, 11, season); err != nil || !slices.Equal(got, []domain.Day{day}) {
			t.Errorf("SkierDays right after AddRides = %v, %v; want [%s]", got, err, day)
		}
		if got, err := s.SkierDayVertical(ctx, resort, season, day, 11); err != nil || got != vert {
			t.Errorf("SkierDayVertical right after AddRides = %d, %v; want %d", got, err, vert)
		}
		want := map[domain.ResortID][]domain.SeasonVertical{resort: {{SeasonID: season, TotalVert: vert}}}
		if got, err := s.SkierSeasonVerticals(ctx, 11, []domain.ResortID{resort}); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SkierSeasonVerticals right after AddRides = %v, %v; want %v", got, err, want)
		}
		if !uniqueLags {
			return
		}
		dynamotest.Eventually(t, "UniqueSkiers once the index caught up", func() string {
			n, err := s.UniqueSkiers(ctx, resort, season, day)
			if err != nil || n != uniqueAfter {
				return fmt.Sprintf("%d, %v (want %d)", n, err, uniqueAfter)
			}
			return ""
		})
		if took := time.Since(start); took < readLag {
			t.Errorf("UniqueSkiers counted the new skiers %v after AddRides began; want no sooner than the lag, %v", took, readLag)
		}
	}
	step([]domain.LiftRide{r1, r2, r3}, 0, 2, []domain.LiftRide{r1, r2})
	step([]domain.LiftRide{r4, r5}, 2, 3, []domain.LiftRide{r1, r2, r4})
}
