package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

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
// A marker is written only once the rides it stands for are stored: a batch
// that fails (and is dead-lettered in the end) leaves no marker of a
// skier-day without rides. A process writes each marker once (markerClaims);
// a redelivery after a forgotten claim, or another process, puts the same
// item again, which costs a write and changes nothing.
type ShardedStore struct {
	AdoptedStore
	markers base
	claims  *markerClaims
}

// MarkerShards is how many partition key values one resort-day's markers
// are spread over. A burst of new skiers at one resort writes
// MarkerShards × 1,000 markers a second before a shard throttles, and
// UniqueSkiers reads MarkerShards small partitions; docs/dynamodb.md
// ("The sharded model: no hot key") explains the choice.
const MarkerShards = 16

// seenMarkers bounds the markers a process remembers having written: about
// a resort-season's skiers, a few MB.
const seenMarkers = 200_000

// Attribute of the marker table.
const attrResortDayShard = "ResortDayShard" // S: resort#season#ddd#shard

type marker struct {
	resort domain.ResortID
	season domain.Season
	day    domain.Day
	skier  domain.SkierID
}

func markerShard(skier domain.SkierID) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strconv.Itoa(int(skier))))
	return int(h.Sum32() % MarkerShards)
}

func resortDayShard(resort domain.ResortID, season domain.Season, day domain.Day, shard int) string {
	return fmt.Sprintf("%010d#%s%02d", resort, dayPrefix(season, day), shard)
}

func (m marker) item() item {
	return item{
		attrResortDayShard: strAttr(resortDayShard(m.resort, m.season, m.day, markerShard(m.skier))),
		attrSkierID:        numAttr(int64(m.skier)),
	}
}

func newSharded(b base, markers base) *ShardedStore {
	return &ShardedStore{AdoptedStore: AdoptedStore{base: b}, markers: markers, claims: newMarkerClaims(seenMarkers)}
}

// markerClaims is what a process knows of its marker writes: those stored
// (an LRU, so a forgotten one is only written again) and those being
// written now by some AddRides. A marker is claimed under the lock before
// it is written, so of concurrent batches of one skier-day only the first
// writes it; the others wait for that write, and take the marker over if
// it fails.
type markerClaims struct {
	mu       sync.Mutex
	written  *lru.Cache[marker, struct{}]
	inFlight map[marker]*markerClaim
}

// markerClaim is one marker write in flight; ok is set before done is
// closed.
type markerClaim struct {
	done chan struct{}
	ok   bool
}

func newMarkerClaims(size int) *markerClaims {
	written, _ := lru.New[marker, struct{}](size) // size > 0: no error
	return &markerClaims{written: written, inFlight: map[marker]*markerClaim{}}
}

// claim drops from ms the markers already written and returns those the
// caller now holds and must write (then settle), and the writes of other
// callers in flight for the rest.
func (c *markerClaims) claim(ms []marker) (mine []marker, others map[marker]*markerClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	others = map[marker]*markerClaim{}
	for _, m := range ms {
		switch cl, busy := c.inFlight[m]; {
		case c.written.Contains(m):
		case busy:
			others[m] = cl
		default:
			c.inFlight[m] = &markerClaim{done: make(chan struct{})}
			mine = append(mine, m)
		}
	}
	return mine, others
}

// settle ends the caller's claims of ms: remembered as written when ok,
// released otherwise so that a retry, or a batch waiting on them, writes
// them.
func (c *markerClaims) settle(ms []marker, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		if ok {
			c.written.Add(m, struct{}{})
		}
		if cl := c.inFlight[m]; cl != nil {
			cl.ok = ok
			close(cl.done)
			delete(c.inFlight, m)
		}
	}
}

// shardedRideItem is the adopted model's ride item without the index's
// sort key: this table has no index.
func shardedRideItem(r domain.LiftRide) item {
	it := rideItem(r)
	delete(it, attrSeasonDaySkier)
	return it
}

// AddRides puts the ride items, 25 a request, and once they are all
// stored the markers of their skier-days: a put of the same item again is
// harmless, so a redelivered batch writes the same items and counts
// nothing twice, and a batch that fails leaves no marker for rides that
// may never be stored.
func (s *ShardedStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	unique := dedupe(rides)
	if err := s.putRides(ctx, unique, shardedRideItem); err != nil {
		return fmt.Errorf("add %d rides to %s: %w", len(rides), s.table, err)
	}
	if err := s.writeMarkers(ctx, markersOf(unique)); err != nil {
		return fmt.Errorf("add the skier-day markers of %d rides to %s: %w", len(rides), s.markers.table, err)
	}
	return nil
}

// markersOf lists the distinct skier-days of rides.
func markersOf(rides []domain.LiftRide) []marker {
	seen := make(map[marker]struct{}, len(rides))
	var ms []marker
	for _, r := range rides {
		m := marker{resort: r.ResortID(), season: r.SeasonID(), day: r.DayID(), skier: r.SkierID()}
		if _, dup := seen[m]; !dup {
			seen[m] = struct{}{}
			ms = append(ms, m)
		}
	}
	return ms
}

// writeMarkers makes sure every marker of ms is stored: it writes those it
// claims and waits for the writes other batches have in flight, taking
// over those that fail.
func (s *ShardedStore) writeMarkers(ctx context.Context, ms []marker) error {
	for len(ms) > 0 {
		mine, others := s.claims.claim(ms)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(s.concurrency)
		putAll(gctx, g, &s.markers, mine, marker.item, func(chunk []marker, err error) {
			s.claims.settle(chunk, err == nil)
		})
		if err := g.Wait(); err != nil {
			return err
		}
		ms = nil
		for m, cl := range others {
			select {
			case <-cl.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !cl.ok {
				ms = append(ms, m)
			}
		}
	}
	return nil
}

// UniqueSkiers counts the day's markers in every shard, the shards read in
// parallel and consistently (queryPages): once AddRides has returned,
// every marker it wrote is counted.
func (s *ShardedStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	counts := make([]int, MarkerShards)
	g, gctx := errgroup.WithContext(ctx)
	for shard := range MarkerShards {
		g.Go(func() error {
			in, err := queryInput(expression.NewBuilder().WithKeyCondition(
				expression.Key(attrResortDayShard).Equal(expression.Value(resortDayShard(resortID, season, day, shard)))))
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
	return countItems(ctx, &s.base, &s.markers)
}
