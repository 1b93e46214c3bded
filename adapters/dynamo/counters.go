package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/skidata/skidata/domain"
)

// CountersStore keeps one item per ride, written in batches like the adopted
// model, plus two kinds of pre-aggregated counter items kept exactly once by
// conditional updates; see "The counters model" in docs/dynamodb.md.
//
//   - a skier-day item per (skier, season, day, resort) in the skier table:
//     TotalVertical and RideKeys, the ids of the rides already added;
//   - a resort-day shard item per (resort, season, day, skier mod
//     ResortDayShards) in the resort-day table: SkierCount and Skiers, the
//     skiers already counted.
//
// Each counter and the set that guards it live in one item, so "not yet
// counted" and "count it" are one atomic conditional update: no transactions
// are needed, and a redelivered ride, a batch written twice or two writers
// at once count once.
type CountersStore struct {
	base
	resortDays base // the resort-day table, same client and counters
}

// ResortDayShards is how many items one resort-day's distinct skiers are
// spread over (by skier id). Each write of a shard rewrites and bills the
// whole shard item (1 WCU a KB), so more shards make registering a skier
// cheaper; UniqueSkiers reads them all, but a read is billed by bytes, not
// items, so the shard count hardly changes its cost. 32 shards keep a shard
// of a 30,000-skier day under 5 KB.
const ResortDayShards = 32

// groupLimit caps the rides (or skiers) one conditional update adds: each
// needs its own contains() term, and expressions are limited to 4 KB.
const groupLimit = 25

// Sort-key prefixes that keep the two item kinds of the skier table apart,
// so a Query over one kind never reads the other.
const (
	rideItemPrefix = "R#"
	dayItemPrefix  = "D#"
)

// Attributes of the counters model's own items.
const (
	attrSkiers     = "Skiers"     // resort-day shard: number set of skier ids counted
	attrSkierCount = "SkierCount" // resort-day shard: how many
)

func countersRideItem(r domain.LiftRide) item {
	return rideAttributes(r, rideItemPrefix+rideSortKey(r))
}

// skierDay names one skier-day item; resortDay one resort-day shard.
type skierDay struct {
	skier  domain.SkierID
	season domain.Season
	day    domain.Day
	resort domain.ResortID
}

type resortDay struct {
	resort domain.ResortID
	season domain.Season
	day    domain.Day
	shard  int
}

func dayOf(r domain.LiftRide) skierDay {
	return skierDay{skier: r.SkierID(), season: r.SeasonID(), day: r.DayID(), resort: r.ResortID()}
}

func (d skierDay) shard() resortDay {
	return resortDay{resort: d.resort, season: d.season, day: d.day, shard: int(d.skier) % ResortDayShards}
}

func resortDaySortKey(d resortDay) string {
	return fmt.Sprintf("%s%02d", dayPrefix(d.season, d.day), d.shard)
}

// AddRides writes in three phases, each finished before the next begins:
//
//  1. the ride items, BatchWriteItem of 25, as the adopted model;
//  2. per skier-day, one conditional UpdateItem adding the rides' vertical
//     and ids unless one of the ids is there already;
//  3. per resort-day shard, one conditional UpdateItem adding the skiers
//     whose skier-day is new, or may be new (see below), unless one is
//     there already.
//
// A failed call may leave any prefix of this done; the batch is then
// redelivered, phase 1 rewrites identical items, phase 2 finds the rides it
// had added (condition fails) and phase 3 is run again for their skiers
// because the first attempt may have stopped before it. Phase 3 is itself
// conditional, so running it again never counts a skier twice.
func (s *CountersStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	unique := dedupe(rides)
	if len(unique) == 0 {
		return nil
	}
	if err := s.putRides(ctx, unique, countersRideItem); err != nil {
		return fmt.Errorf("add %d rides to %s: %w", len(rides), s.table, err)
	}
	skiers, err := s.addToSkierDays(ctx, unique)
	if err != nil {
		return fmt.Errorf("add %d rides to the skier-day counters of %s: %w", len(rides), s.table, err)
	}
	if err := s.addToResortDays(ctx, skiers); err != nil {
		return fmt.Errorf("add %d skier-days to the resort-day counters of %s: %w", len(skiers), s.resortDays.table, err)
	}
	return nil
}

// addToSkierDays runs phase 2 and returns the skier-days phase 3 must
// register: those this call created and those whose rides were already
// counted (a redelivery, which may have stopped before phase 3).
func (s *CountersStore) addToSkierDays(ctx context.Context, rides []domain.LiftRide) ([]skierDay, error) {
	groups := map[skierDay][]domain.LiftRide{}
	var order []skierDay
	for _, r := range rides {
		d := dayOf(r)
		if _, ok := groups[d]; !ok {
			order = append(order, d)
		}
		groups[d] = append(groups[d], r)
	}
	var (
		mu    sync.Mutex
		needs []skierDay
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, d := range order {
		for chunk := range slices.Chunk(groups[d], groupLimit) {
			g.Go(func() error {
				need, err := s.addGroupToSkierDay(gctx, d, chunk)
				if err != nil || !need {
					return err
				}
				mu.Lock()
				needs = append(needs, d)
				mu.Unlock()
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return needs, nil
}

// addGroupToSkierDay adds rides of one skier-day in one update if none of
// them is counted yet; when one is, it falls back to one update per ride,
// so the others are still added. It reports whether the skier-day needs
// registering in its resort-day (new, or seen before).
func (s *CountersStore) addGroupToSkierDay(ctx context.Context, d skierDay, rides []domain.LiftRide) (bool, error) {
	created, err := s.updateSkierDay(ctx, d, rides)
	if err == nil {
		return created, nil
	}
	if !conditionFailed(err) {
		return false, err
	}
	// Some ride of the group is counted already: a redelivery, or another
	// writer got there first. Phase 3 must run (the earlier attempt may have
	// stopped before it), and each ride not yet counted is added alone.
	if len(rides) > 1 {
		for _, r := range rides {
			if _, err := s.updateSkierDay(ctx, d, []domain.LiftRide{r}); err != nil && !conditionFailed(err) {
				return false, err
			}
		}
	}
	return true, nil
}

// updateSkierDay is one conditional UpdateItem on a skier-day item. It
// reports whether the item did not exist before (UPDATED_OLD returns no
// TotalVertical), in which case this call made the skier-day.
func (s *CountersStore) updateSkierDay(ctx context.Context, d skierDay, rides []domain.LiftRide) (bool, error) {
	keys := make([]string, len(rides))
	vert := 0
	conds := make([]expression.ConditionBuilder, len(rides))
	for i, r := range rides {
		keys[i] = rideKey(r)
		vert += r.Vertical()
		conds[i] = expression.Not(expression.Name(attrRideKeys).Contains(keys[i]))
	}
	cond := allOf(conds)
	update := expression.
		Set(expression.Name(attrResortID), expression.Value(d.resort)).
		Set(expression.Name(attrSeasonID), expression.Value(d.season.String())).
		Set(expression.Name(attrDayID), expression.Value(d.day.Number())).
		Add(expression.Name(attrTotalVertical), expression.Value(vert)).
		Add(expression.Name(attrRideKeys), expression.Value(types.AttributeValueMemberSS{Value: keys}))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("build skier-day update: %w", err)
	}
	out, err := s.updateItem(ctx, "AddRides", &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key: item{
			attrSkierID: numAttr(int64(d.skier)),
			attrSortKey: strAttr(dayItemPrefix + skierDaySortKey(d.season, d.day, d.resort)),
		},
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              types.ReturnValueUpdatedOld,
	})
	if err != nil {
		if conditionFailed(err) {
			return false, err
		}
		return false, unavailable(fmt.Errorf("update skier-day item of skier %d, %s day %s, resort %d: %w", d.skier, d.season, d.day, d.resort, err))
	}
	_, existed := out.Attributes[attrTotalVertical]
	return !existed, nil
}

// addToResortDays runs phase 3: one conditional update per resort-day
// shard adding the skiers not yet in it.
func (s *CountersStore) addToResortDays(ctx context.Context, days []skierDay) error {
	groups := map[resortDay][]domain.SkierID{}
	var order []resortDay
	for _, d := range days {
		rd := d.shard()
		if _, ok := groups[rd]; !ok {
			order = append(order, rd)
		}
		if !slices.Contains(groups[rd], d.skier) {
			groups[rd] = append(groups[rd], d.skier)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, rd := range order {
		for chunk := range slices.Chunk(groups[rd], groupLimit) {
			g.Go(func() error {
				err := s.updateResortDay(gctx, rd, chunk)
				if err == nil || !conditionFailed(err) {
					return err
				}
				if len(chunk) == 1 {
					return nil // counted already
				}
				for _, skier := range chunk {
					if err := s.updateResortDay(gctx, rd, []domain.SkierID{skier}); err != nil && !conditionFailed(err) {
						return err
					}
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// updateResortDay adds the skiers to a shard's set and its count, unless
// one of them is in the set already: set and count change together or not
// at all.
func (s *CountersStore) updateResortDay(ctx context.Context, rd resortDay, skiers []domain.SkierID) error {
	ids := make([]string, len(skiers))
	conds := make([]expression.ConditionBuilder, len(skiers))
	for i, sk := range skiers {
		ids[i] = strconv.Itoa(int(sk))
		conds[i] = expression.Not(expression.Name(attrSkiers).Contains(types.AttributeValueMemberN{Value: ids[i]}))
	}
	cond := allOf(conds)
	update := expression.
		Add(expression.Name(attrSkierCount), expression.Value(len(skiers))).
		Add(expression.Name(attrSkiers), expression.Value(types.AttributeValueMemberNS{Value: ids}))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build resort-day update: %w", err)
	}
	_, err = s.resortDays.updateItem(ctx, "AddRides", &dynamodb.UpdateItemInput{
		TableName: aws.String(s.resortDays.table),
		Key: item{
			attrResortID: numAttr(int64(rd.resort)),
			attrSortKey:  strAttr(resortDaySortKey(rd)),
		},
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil && !conditionFailed(err) {
		return unavailable(fmt.Errorf("update resort-day item of resort %d, %s day %s, shard %d: %w", rd.resort, rd.season, rd.day, rd.shard, err))
	}
	return err
}

// allOf joins the conditions with AND in one flat expression: nesting
// And(And(a, b), c) makes a parenthesis per term, which dynalite's parser
// takes exponential time over.
func allOf(conds []expression.ConditionBuilder) expression.ConditionBuilder {
	if len(conds) == 1 {
		return conds[0]
	}
	return expression.And(conds[0], conds[1], conds[2:]...)
}

func conditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// UniqueSkiers sums the SkierCount of the resort-day's shards: one Query
// of at most ResortDayShards small items, whatever the number of rides,
// read consistently (queryPages).
func (s *CountersStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	in, err := queryInput(expression.NewBuilder().
		WithKeyCondition(expression.Key(attrResortID).Equal(expression.Value(resortID)).
			And(expression.Key(attrSortKey).BeginsWith(dayPrefix(season, day)))).
		WithProjection(namesList(attrSkierCount)))
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.resortDays.query(ctx, "UniqueSkiers", in, func(it item) error {
		c, err := getNum(it, attrSkierCount)
		n += int(c)
		return err
	})
	return n, err
}

// SkierDayVertical reads one skier-day item's TotalVertical.
func (s *CountersStore) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	return s.totalVertical(ctx, skierID, dayItemPrefix+skierDaySortKey(season, day, resortID))
}

// SkierSeasonVerticals sums the skier's skier-day totals per resort and
// season, for the resorts asked for: one small item per day skied instead
// of every ride, in one Query.
func (s *CountersStore) SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	return s.seasonVerticals(ctx, skierID, resortIDs, dayItemPrefix, attrTotalVertical)
}

// SkierDays lists the days of the skier's skier-day items in the season.
func (s *CountersStore) SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	return s.skierDays(ctx, skierID, dayItemPrefix+seasonPrefix(season))
}

// SkierDayRides reads the skier's ride items of the day.
func (s *CountersStore) SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	return s.rideItems(ctx, "SkierDayRides", skierID, rideItemPrefix+dayPrefix(season, day))
}

// CountItems counts the items of both tables: rides, skier-days and
// resort-day shards.
func (s *CountersStore) CountItems(ctx context.Context) (int64, error) {
	return countItems(ctx, &s.base, &s.resortDays)
}
