package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/errgroup"

	"github.com/skidata/skidata/domain"
)

// ShardedStore is the production model: no partition key value of any of
// its tables takes more than a small share of a resort-day's writes, so a
// burst at one resort spreads over many partitions; see "The sharded
// model" in docs/dynamodb.md.
//
//   - The skier table holds one item per ride under the skier (as the
//     adopted model) but has no index: a ride is one write, on its
//     skier's partition. The skier queries are the adopted model's.
//   - The marker table holds one item per skier-day and resort, keyed by a
//     write-sharded resort-day ("resort#season#day#shard", shard from a hash
//     of the skier) and the skier. A skier's markers all land on the same
//     shard, so a put is idempotent and UniqueSkiers counts the items of
//     the MarkerShards shards (Select COUNT, in parallel).
//
// A marker is put once per skier-day a process sees (an LRU of the markers
// written); a redelivery or another process puts the same item again,
// which costs a write and changes nothing.
type ShardedStore struct {
	AdoptedStore
	markers base
	seen    *lru.Cache[marker, struct{}]
}

// MarkerShards is how many partition key values one resort-day's markers
// are spread over. A burst of new skiers at one resort writes
// MarkerShards × 1,000 markers a second before a shard throttles, and
// UniqueSkiers reads MarkerShards small partitions; docs/benchmarks.md
// has the measurements behind the choice.
const MarkerShards = 16

// seenMarkers bounds the markers a process remembers having written: about
// a resort-season's skiers, a few MB.
const seenMarkers = 200_000

// Attribute of the marker table.
const attrResortDayShard = "ResortDayShard" // S: resort#season#ddd#shard

type marker struct {
	resort domain.ResortID
	season string
	day    int
	skier  domain.SkierID
}

func markerShard(skier domain.SkierID) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strconv.Itoa(int(skier))))
	return int(h.Sum32() % MarkerShards)
}

func resortDayShard(resort domain.ResortID, season string, day, shard int) string {
	return fmt.Sprintf("%010d#%s%02d", resort, dayPrefix(season, day), shard)
}

func (m marker) item() item {
	return item{
		attrResortDayShard: strAttr(resortDayShard(m.resort, m.season, m.day, markerShard(m.skier))),
		attrSkierID:        numAttr(int64(m.skier)),
	}
}

func newSharded(b base, markers base) *ShardedStore {
	seen, _ := lru.New[marker, struct{}](seenMarkers) // size > 0: no error
	return &ShardedStore{AdoptedStore: AdoptedStore{base: b}, markers: markers, seen: seen}
}

// shardedRideItem is the adopted model's ride item without the index's
// sort key: this table has no index.
func shardedRideItem(r domain.LiftRide) item {
	it := rideItem(r)
	delete(it, attrSeasonDaySkier)
	return it
}

// AddRides puts the ride items and the markers not yet written, 25 a
// request, both at once: a put of the same item again is harmless, so a
// redelivered batch writes the same items and counts nothing twice.
func (s *ShardedStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	unique := dedupe(rides)
	var markers []marker
	for _, r := range unique {
		m := marker{resort: r.ResortID(), season: r.SeasonID(), day: r.DayID(), skier: r.SkierID()}
		if !s.seen.Contains(m) && !slices.Contains(markers, m) {
			markers = append(markers, m)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	putAll(gctx, g, &s.base, unique, shardedRideItem, nil)
	putAll(gctx, g, &s.markers, markers, marker.item, func(written []marker) {
		for _, m := range written {
			s.seen.Add(m, struct{}{})
		}
	})
	if err := g.Wait(); err != nil {
		return fmt.Errorf("add %d rides to %s and %s: %w", len(rides), s.table, s.markers.table, err)
	}
	return nil
}

// UniqueSkiers counts the day's markers in every shard, the shards read in
// parallel.
func (s *ShardedStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, seasonID string, dayID int) (int, error) {
	counts := make([]int, MarkerShards)
	g, gctx := errgroup.WithContext(ctx)
	for shard := range MarkerShards {
		g.Go(func() error {
			in, err := queryInput(expression.NewBuilder().WithKeyCondition(
				expression.Key(attrResortDayShard).Equal(expression.Value(resortDayShard(resortID, seasonID, dayID, shard)))))
			if err != nil {
				return err
			}
			in.Select = types.SelectCount
			return s.markers.queryPages(gctx, "UniqueSkiers", in, func(out *dynamodb.QueryOutput) error {
				counts[shard] += int(out.Count)
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// CountItems counts the ride items and the markers.
func (s *ShardedStore) CountItems(ctx context.Context) (int64, error) {
	n, err := s.base.CountItems(ctx)
	if err != nil {
		return 0, err
	}
	m, err := s.markers.CountItems(ctx)
	return n + m, err
}
