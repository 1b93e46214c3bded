package dynamo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
)

// markerWatch is a client in front of dynalite that sees the sharded
// model's BatchWriteItems: it can fail those of a table, counts the
// marker puts that were sent and stored, and can hold marker writes
// until a number of ride writes have been stored.
type markerWatch struct {
	dynamo.API
	rideTable, markerTable string

	mu          sync.Mutex
	fail        map[string]bool // table -> fail its writes
	markersSent int             // marker puts sent to the fake, failed or not
	markersPut  int             // marker puts stored
	ridesPut    int             // ride BatchWriteItems stored
	holdUntil   int             // hold marker writes until this many ride writes are stored
	ridesDone   chan struct{}   // closed when ridesPut reaches holdUntil
}

var errInjected = &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected by the test"}

func newMarkerWatch(api dynamo.API, cfg dynamo.Config) *markerWatch {
	return &markerWatch{
		API:       api,
		rideTable: cfg.TablePrefix + dynamo.SkierTableName, markerTable: cfg.TablePrefix + dynamo.MarkerTableName,
		fail: map[string]bool{}, ridesDone: make(chan struct{}),
	}
}

func (w *markerWatch) setFail(table string, fail bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail[table] = fail
}

func (w *markerWatch) counts() (sent, put int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.markersSent, w.markersPut
}

func (w *markerWatch) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	markers := len(in.RequestItems[w.markerTable])
	rides := len(in.RequestItems[w.rideTable])
	w.mu.Lock()
	w.markersSent += markers
	failing := (markers > 0 && w.fail[w.markerTable]) || (rides > 0 && w.fail[w.rideTable])
	hold := markers > 0 && w.holdUntil > 0
	w.mu.Unlock()
	if failing {
		return nil, errInjected
	}
	if hold {
		select {
		case <-w.ridesDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out, err := w.API.BatchWriteItem(ctx, in, optFns...)
	if err != nil {
		return out, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	left := out.UnprocessedItems
	w.markersPut += markers - len(left[w.markerTable])
	if rides > 0 && len(left[w.rideTable]) == 0 {
		w.ridesPut++
		if w.ridesPut == w.holdUntil {
			close(w.ridesDone)
		}
	}
	return out, nil
}

func shardedWatched(t *testing.T, tune func(*markerWatch)) (dynamo.Store, *markerWatch) {
	t.Helper()
	client := dynamotest.Client(t)
	cfg := newTables(t, client, dynamo.ModelSharded)
	w := newMarkerWatch(client, cfg)
	if tune != nil {
		tune(w)
	}
	s, err := dynamo.NewRideStore(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// A batch whose ride write fails is dead-lettered after its retries: if
// its marker had been written, UniqueSkiers would count a skier with no
// rides. The marker is written only once the rides are stored, so the
// failed call sends none, and the redelivered batch writes it.
func TestShardedRideWriteFailureLeavesNoMarkerAndRetryWritesIt(t *testing.T) {
	t.Parallel()
	s, w := shardedWatched(t, nil)
	ctx := dynamotest.Context(t)
	rides := []domain.LiftRide{mustRide(t, 4, "2025", 9, 77, 100, 2), mustRide(t, 4, "2025", 9, 77, 130, 3)}

	w.setFail(w.rideTable, true)
	if err := s.AddRides(ctx, rides); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AddRides with the ride write failing = %v; want ErrUnavailable", err)
	}
	if sent, _ := w.counts(); sent != 0 {
		t.Errorf("markers sent while the ride write failed = %d; want none", sent)
	}
	if n, err := s.UniqueSkiers(ctx, 4, domain.MustSeason("2025"), domain.MustDay(9)); err != nil || n != 0 {
		t.Errorf("UniqueSkiers after the failed batch = %d, %v; want 0 (a skier with no rides is not counted)", n, err)
	}

	w.setFail(w.rideTable, false)
	redeliverStoresOneMarker(t, s, w, rides)
}

// A marker whose write fails is not remembered as written: the
// redelivered batch writes it.
func TestShardedMarkerWriteFailureIsWrittenByTheRetry(t *testing.T) {
	t.Parallel()
	s, w := shardedWatched(t, nil)
	ctx := dynamotest.Context(t)
	rides := []domain.LiftRide{mustRide(t, 4, "2025", 9, 78, 100, 2)}

	w.setFail(w.markerTable, true)
	if err := s.AddRides(ctx, rides); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AddRides with the marker write failing = %v; want ErrUnavailable", err)
	}
	w.setFail(w.markerTable, false)
	redeliverStoresOneMarker(t, s, w, rides)
}

// redeliverStoresOneMarker writes again the rides of one skier-day of
// resort 4, 2025, day 9 whose first write failed: the redelivery stores the
// day's one marker, and the skier is counted.
func redeliverStoresOneMarker(t *testing.T, s dynamo.Store, w *markerWatch, rides []domain.LiftRide) {
	t.Helper()
	ctx := dynamotest.Context(t)
	if err := s.AddRides(ctx, rides); err != nil {
		t.Fatalf("AddRides redelivered: %v", err)
	}
	if _, put := w.counts(); put != 1 {
		t.Errorf("markers stored = %d; want the redelivery's 1", put)
	}
	if n, err := s.UniqueSkiers(ctx, 4, domain.MustSeason("2025"), domain.MustDay(9)); err != nil || n != 1 {
		t.Errorf("UniqueSkiers after the redelivery = %d, %v; want 1", n, err)
	}
}

// Batches of the same skier-day running at once write its marker once:
// the first claims it, the others wait for that write instead of sending
// their own. Marker writes are held until every batch's rides are stored,
// so all batches reach their markers while the first write is in flight.
func TestShardedConcurrentBatchesWriteAMarkerOnce(t *testing.T) {
	t.Parallel()
	const batches = 8
	s, w := shardedWatched(t, func(w *markerWatch) { w.holdUntil = batches })
	ctx := dynamotest.Context(t)
	g, gctx := errgroup.WithContext(ctx)
	for i := range batches {
		r := mustRide(t, 4, "2025", 9, 79, int32(100+i), 2)
		g.Go(func() error { return s.AddRides(gctx, []domain.LiftRide{r}) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("AddRides: %v", err)
	}
	if sent, put := w.counts(); sent != 1 || put != 1 {
		t.Errorf("marker puts of one skier-day over %d concurrent batches: %d sent, %d stored; want 1 and 1", batches, sent, put)
	}
	if n, err := s.UniqueSkiers(ctx, 4, domain.MustSeason("2025"), domain.MustDay(9)); err != nil || n != 1 {
		t.Errorf("UniqueSkiers = %d, %v; want 1", n, err)
	}
}

// Many skiers of one resort-day on the same marker shard: with pages of 4
// items, UniqueSkiers must follow LastEvaluatedKey over several pages of
// that shard (Select COUNT counts per page) and still count each skier
// exactly once.
func TestShardedUniqueSkiersFollowsPagesWithinAShard(t *testing.T) {
	t.Parallel()
	const onShard, pageLimit = 30, 4
	s := rideStore(t, dynamo.ModelSharded, func(c *dynamo.Config) { c.PageLimit = pageLimit })
	ctx := dynamotest.Context(t)
	// onShard skiers on shard 0, and a few on others so that the shards'
	// counts are added.
	var crowded, elsewhere []domain.SkierID
	for skier := domain.SkierID(1); len(crowded) < onShard || len(elsewhere) < 3; skier++ {
		if dynamo.MarkerShardOf(skier) == 0 {
			crowded = append(crowded, skier)
		} else {
			elsewhere = append(elsewhere, skier)
		}
	}
	var rides []domain.LiftRide
	for _, skier := range append(crowded[:onShard], elsewhere[:3]...) {
		rides = append(rides, mustRide(t, 6, "2025", 10, skier, 100, 2))
	}
	if err := s.AddRides(ctx, rides); err != nil {
		t.Fatal(err)
	}
	if n, err := s.UniqueSkiers(ctx, 6, domain.MustSeason("2025"), domain.MustDay(10)); err != nil || n != len(rides) {
		t.Errorf("UniqueSkiers = %d, %v; want %d (%d on one shard)", n, err, len(rides), onShard)
	}
	// One request at least per shard, and the crowded one needs
	// ceil(30/4) = 8 pages.
	if got, want := s.Stats()["UniqueSkiers"].Requests, int64(dynamo.MarkerShards-1+(onShard+pageLimit-1)/pageLimit); got < want {
		t.Errorf("UniqueSkiers sent %d Query requests; want at least %d (8 pages on the crowded shard)", got, want)
	}
}
