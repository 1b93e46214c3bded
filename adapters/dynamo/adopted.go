package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/cenkalti/backoff/v5"
	"golang.org/x/sync/errgroup"

	"github.com/skidata/skidata/domain"
)

// batchSize is BatchWriteItem's limit of put requests per call.
const batchSize = 25

// AdoptedStore keeps one item per ride; see docs/dynamodb.md.
type AdoptedStore struct {
	base
}

var errUnprocessed = errors.New("DynamoDB left items unprocessed")

func rideItem(r domain.LiftRide) item {
	it := rideAttributes(r, rideSortKey(r))
	it[attrSeasonDaySkier] = strAttr(seasonDaySkier(r.SeasonID(), r.DayID(), r.SkierID()))
	return it
}

// rideAttributes are the attributes every model's ride item carries, under
// the model's sort key.
func rideAttributes(r domain.LiftRide, sortKey string) item {
	it := make(item, 9)
	it[attrSkierID] = numAttr(int64(r.SkierID()))
	it[attrSortKey] = strAttr(sortKey)
	it[attrResortID] = numAttr(int64(r.ResortID()))
	it[attrSeasonID] = strAttr(r.SeasonID().String())
	it[attrDayID] = numAttr(int64(r.DayID().Number()))
	it[attrTime] = numAttr(int64(r.Time()))
	it[attrLiftID] = numAttr(int64(r.LiftID()))
	it[attrVertical] = numAttr(int64(r.Vertical()))
	return it
}

func itemRide(it item) (domain.LiftRide, error) {
	var vals [4]int64
	for i, name := range []string{attrResortID, attrSkierID, attrTime, attrLiftID} {
		n, err := getNum(it, name)
		if err != nil {
			return domain.LiftRide{}, err
		}
		vals[i] = n
	}
	season, err := getSeason(it, attrSeasonID)
	if err != nil {
		return domain.LiftRide{}, err
	}
	day, err := getDay(it, attrDayID)
	if err != nil {
		return domain.LiftRide{}, err
	}
	return domain.NewLiftRide(domain.ResortID(vals[0]), season, day, domain.SkierID(vals[1]), int32(vals[2]), int32(vals[3]))
}

// AddRides writes the rides as puts of 25, several requests in flight. A put
// of a ride already stored overwrites the same item with the same values,
// which is what makes a redelivered batch harmless. Duplicates are dropped
// first because BatchWriteItem rejects a request naming one key twice.
func (s *AdoptedStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	if err := s.putRides(ctx, dedupe(rides), rideItem); err != nil {
		return fmt.Errorf("add %d rides to %s: %w", len(rides), s.table, err)
	}
	return nil
}

// writeBatch sends one BatchWriteItem and then, alone, what DynamoDB
// throttled: the requests it hands back in UnprocessedItems, or the whole
// request when it refuses all of it (ProvisionedThroughputExceededException).
// Only those are sent again, with exponential backoff and jitter, until
// everything is written or ctx ends; what was written is never sent again.
func (b *base) writeBatch(ctx context.Context, reqs []types.WriteRequest) error {
	pending := map[string][]types.WriteRequest{b.table: reqs}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		out, err := b.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems:           pending,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
		}, b.countThrottles)
		if throttled(err) {
			return struct{}{}, err // counted per attempt by countThrottles
		}
		if err != nil {
			// The SDK has already retried transient errors.
			return struct{}{}, backoff.Permanent(unavailable(fmt.Errorf("batch write: %w", err)))
		}
		b.record("AddRides", true, out.ConsumedCapacity...)
		if n := countRequests(out.UnprocessedItems); n > 0 {
			b.throttled("BatchWriteItem", n)
			pending = out.UnprocessedItems
			return struct{}{}, errUnprocessed
		}
		return struct{}{}, nil
	}, backoff.WithBackOff(b.backOff()), backoff.WithMaxElapsedTime(0))
	return err
}

// putRides puts an item per ride, made by toItem, 25 a request with several
// requests in flight.
func (b *base) putRides(ctx context.Context, rides []domain.LiftRide, toItem func(domain.LiftRide) item) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.concurrency)
	putAll(gctx, g, b, rides, toItem, nil)
	return g.Wait()
}

// putAll queues on g one BatchWriteItem (writeBatch) per 25 of xs, each
// made an item by toItem; done, when not nil, is called with each chunk
// and the outcome of its write, stored (nil) or not. Every chunk is
// attempted, so done sees each of them (after a failure the others fail
// fast on the cancelled context).
func putAll[T any](ctx context.Context, g *errgroup.Group, b *base, xs []T, toItem func(T) item, done func([]T, error)) {
	for chunk := range slices.Chunk(xs, batchSize) {
		reqs := make([]types.WriteRequest, len(chunk))
		for i, x := range chunk {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: toItem(x)}}
		}
		g.Go(func() error {
			err := b.writeBatch(ctx, reqs)
			if done != nil {
				done(chunk, err)
			}
			return err
		})
	}
}

func countRequests(m map[string][]types.WriteRequest) int {
	n := 0
	for _, reqs := range m {
		n += len(reqs)
	}
	return n
}

func dedupe(rides []domain.LiftRide) []domain.LiftRide {
	seen := make(map[domain.LiftRide]struct{}, len(rides))
	out := make([]domain.LiftRide, 0, len(rides))
	for _, r := range rides {
		if _, dup := seen[r]; !dup {
			seen[r] = struct{}{}
			out = append(out, r)
		}
	}
	return out
}

// UniqueSkiers queries the resort index for the day's entries (one per
// ride) and counts the distinct skiers among them. An index cannot be read
// consistently: a ride stored in the last moments (usually under a
// second on AWS) may not be counted yet, even once the queue has drained.
func (s *AdoptedStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	in, err := dayIndexQuery(resortID, season, day)
	if err != nil {
		return 0, err
	}
	skiers := map[int64]struct{}{}
	err = s.query(ctx, "UniqueSkiers", in, func(it item) error {
		id, err := getNum(it, attrSkierID)
		skiers[id] = struct{}{}
		return err
	})
	return len(skiers), err
}

// SkierDayVertical sums the Vertical of the skier's rides of that day at
// the resort.
func (s *AdoptedStore) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	var total int64
	err := s.querySkier(ctx, "SkierDayVertical", skierID, dayPrefix(season, day), resortID, func(it item) error {
		v, err := getNum(it, attrVertical)
		total += v
		return err
	}, attrVertical)
	return total, err
}

// SkierSeasonVerticals reads all the skier's rides (one Query over the
// skier's partition, whatever the number of resorts) and sums those of the
// resorts asked for per resort and season.
func (s *AdoptedStore) SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	return s.seasonVerticals(ctx, skierID, resortIDs, "", attrVertical)
}

// SkierDays reads the skier's rides of the season and lists their days.
func (s *AdoptedStore) SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	return s.skierDays(ctx, skierID, seasonPrefix(season))
}

// SkierDayRides reads the skier's rides of the day.
func (s *AdoptedStore) SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	return s.rideItems(ctx, "SkierDayRides", skierID, dayPrefix(season, day))
}

// seasonTotals sums vertical per season over the items a query returns.
type seasonTotals map[domain.Season]int64

// adder returns the per-item callback that adds the item's vertical
// attribute (a ride's or a day's) to its season.
func (t seasonTotals) adder(verticalAttr string) func(item) error {
	return func(it item) error {
		season, err := getSeason(it, attrSeasonID)
		if err != nil {
			return err
		}
		v, err := getNum(it, verticalAttr)
		t[season] += v
		return err
	}
}

func (t seasonTotals) sorted() []domain.SeasonVertical {
	out := make([]domain.SeasonVertical, 0, len(t))
	for season, v := range t {
		out = append(out, domain.SeasonVertical{SeasonID: season, TotalVert: v})
	}
	slices.SortFunc(out, func(a, b domain.SeasonVertical) int { return a.SeasonID.Compare(b.SeasonID) })
	return out
}

// resortSeasonTotals sums vertical per resort and season over the items a
// query of the skier's partition returns, keeping the resorts asked for.
// The resorts are filtered here rather than in a FilterExpression: a filter
// would save no read capacity (it applies after the read), and one Query
// then answers any number of resorts.
type resortSeasonTotals struct {
	want map[domain.ResortID]bool
	sums map[domain.ResortID]seasonTotals
}

func newResortSeasonTotals(resortIDs []domain.ResortID) resortSeasonTotals {
	t := resortSeasonTotals{want: map[domain.ResortID]bool{}, sums: map[domain.ResortID]seasonTotals{}}
	for _, id := range resortIDs {
		t.want[id] = true
	}
	return t
}

// adder is seasonTotals.adder per resort; items of other resorts are skipped.
func (t resortSeasonTotals) adder(verticalAttr string) func(item) error {
	return func(it item) error {
		r, err := getNum(it, attrResortID)
		if err != nil {
			return err
		}
		id := domain.ResortID(r)
		if !t.want[id] {
			return nil
		}
		if t.sums[id] == nil {
			t.sums[id] = seasonTotals{}
		}
		return t.sums[id].adder(verticalAttr)(it)
	}
}

func (t resortSeasonTotals) sorted() map[domain.ResortID][]domain.SeasonVertical {
	out := make(map[domain.ResortID][]domain.SeasonVertical, len(t.sums))
	for id, st := range t.sums {
		out[id] = st.sorted()
	}
	return out
}

// seasonVerticals sums verticalAttr of the skier's items under prefix per
// resort and season, for the resorts asked for, in one Query.
func (b *base) seasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID, prefix, verticalAttr string) (map[domain.ResortID][]domain.SeasonVertical, error) {
	totals := newResortSeasonTotals(resortIDs)
	if err := b.querySkier(ctx, "SkierSeasonVerticals", skierID, prefix, 0, totals.adder(verticalAttr), attrResortID, attrSeasonID, verticalAttr); err != nil {
		return nil, err
	}
	return totals.sorted(), nil
}

// skierDays lists the days of the skier's items under prefix.
func (b *base) skierDays(ctx context.Context, skierID domain.SkierID, prefix string) ([]domain.Day, error) {
	days := daySet{}
	if err := b.querySkier(ctx, "SkierDays", skierID, prefix, 0, days.add, attrDayID); err != nil {
		return nil, err
	}
	return days.sorted(), nil
}

// daySet collects the distinct days of the items a query returns.
type daySet map[domain.Day]struct{}

func (days daySet) add(it item) error {
	d, err := getDay(it, attrDayID)
	if err != nil {
		return err
	}
	days[d] = struct{}{}
	return nil
}

func (days daySet) sorted() []domain.Day {
	out := make([]domain.Day, 0, len(days))
	for d := range days {
		out = append(out, d)
	}
	slices.SortFunc(out, domain.Day.Compare)
	return out
}
