package dynamo_test

import (
	"testing"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
)

// hottestShare loads one resort-day (200 skiers, 5 rides each, in batches
// of 100 as the persister writes them) through an accounting proxy and
// returns the largest share of the write units that one partition key
// value of a table or index took.
func hottestShare(t *testing.T, model string) (float64, dynamosim.PartitionUsage) {
	t.Helper()
	px := dynamotest.NewProxy(t, dynamosim.Options{})
	client := dynamosim.ClientFor(px.URL)
	cfg := newTables(t, client, model)
	s, err := dynamo.NewRideStore(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := dynamotest.Context(t)
	var rides []domain.LiftRide
	for i := range 5 {
		for sk := int32(1); sk <= 200; sk++ {
			rides = append(rides, mustRide(t, 9, "2025", 12, domain.SkierID(1000+sk*7), int32(60+i*30), 1+sk%8))
		}
	}
	for start := 0; start < len(rides); start += 100 {
		if err := s.AddRides(ctx, rides[start:start+100]); err != nil {
			t.Fatal(err)
		}
	}
	parts := px.Partitions()
	var total float64
	for _, p := range parts {
		total += p.WriteUnits
	}
	return parts[0].WriteUnits / total, parts[0]
}

// The production model has no hot key: no partition key value of its
// tables takes more than 5% of a resort-day's writes. The adopted model,
// measured the same way, shows the test can see a hot key.
func TestShardedModelHasNoHotKey(t *testing.T) {
	t.Run("sharded", func(t *testing.T) {
		t.Parallel()
		share, hot := hottestShare(t, dynamo.ModelSharded)
		if share > 0.05 {
			t.Errorf("hottest partition %+v took %.1f%% of the writes; want at most 5%%", hot, 100*share)
		}
	})
	t.Run("adopted", func(t *testing.T) {
		t.Parallel()
		share, hot := hottestShare(t, dynamo.ModelAdopted)
		if share < 0.4 {
			t.Errorf("adopted model's hottest partition %+v took %.1f%%; its resort index should take about half", hot, 100*share)
		}
	})
}
