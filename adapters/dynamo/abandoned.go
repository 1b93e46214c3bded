package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/skidata/skidata/domain"
)

// AbandonedStore keeps one item per skier, day and resort: the list of the
// skier's rides there, their total vertical, and the set of ride ids already
// added; see docs/dynamodb.md for why the project moved away from it.
type AbandonedStore struct {
	base
}

// rideKey is a ride's identity within its skier-day item: the item's key
// already fixes resort, season, day and skier, so time and lift are enough,
// and keeping the key short keeps the item (400 KB at most) from filling up.
func rideKey(r domain.LiftRide) string {
	return strconv.Itoa(int(r.Time())) + "/" + strconv.Itoa(int(r.LiftID()))
}

// addRideUpdate appends the ride to its skier-day item, unless the item's
// RideKeys already hold it (a redelivery): the condition and the update
// are one atomic step, so concurrent writers of the same ride add it once.
func addRideUpdate(r domain.LiftRide) (expression.Expression, error) {
	ride := types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: item{
		attrLiftID: numAttr(int64(r.LiftID())),
		attrTime:   numAttr(int64(r.Time())),
	}}}}
	list := expression.Name(attrLiftList)
	update := expression.
		Set(list, expression.ListAppend(expression.IfNotExists(list, expression.Value(types.AttributeValueMemberL{Value: []types.AttributeValue{}})), expression.Value(ride))).
		Set(expression.Name(attrResortID), expression.Value(r.ResortID())).
		Set(expression.Name(attrSeasonID), expression.Value(r.SeasonID().String())).
		Set(expression.Name(attrDayID), expression.Value(r.DayID().Number())).
		Set(expression.Name(attrSeasonDaySkier), expression.Value(seasonDaySkier(r.SeasonID(), r.DayID(), r.SkierID()))).
		Add(expression.Name(attrTotalVertical), expression.Value(r.Vertical())).
		Add(expression.Name(attrRideKeys), expression.Value(types.AttributeValueMemberSS{Value: []string{rideKey(r)}}))
	cond := expression.Not(expression.Name(attrRideKeys).Contains(rideKey(r)))
	return expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
}

// AddRides sends one conditional UpdateItem per distinct ride, several in
// flight. A ride already stored fails the condition; that is its success.
func (s *AbandonedStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, r := range dedupe(rides) {
		g.Go(func() error { return s.addRide(gctx, r) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("add %d rides to %s: %w", len(rides), s.table, err)
	}
	return nil
}

func (s *AbandonedStore) addRide(ctx context.Context, r domain.LiftRide) error {
	expr, err := addRideUpdate(r)
	if err != nil {
		return fmt.Errorf("ride %s: %w", r.Key(), err)
	}
	_, err = s.updateItem(ctx, "AddRides", &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key: item{
			attrSkierID: numAttr(int64(r.SkierID())),
			attrSortKey: strAttr(skierDaySortKey(r.SeasonID(), r.DayID(), r.ResortID())),
		},
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	switch {
	case err == nil, conditionFailed(err):
		return nil // a failed condition: already stored
	case itemTooLarge(err):
		return &wrapped{kind: domain.ErrInvalid, err: fmt.Errorf(
			"ride %s: skier %d's item for season %s day %s at resort %d is full: "+
				"one skier-day item holds at least %d rides (DynamoDB's 400 KB item limit): %w",
			r.Key(), r.SkierID(), r.SeasonID(), r.DayID(), r.ResortID(), RidesPerSkierDayItem, err)}
	default:
		return unavailable(fmt.Errorf("update item for ride %s: %w", r.Key(), err))
	}
}

// RidesPerSkierDayItem is at least how many rides fit one skier-day item before
// it reaches DynamoDB's 400 KB item limit. Each ride adds a list element
// {LiftID, Time} (a map with two attribute names and two numbers, about 22
// bytes) and a RideKeys string ("time/lift", about 10 bytes), about 32 bytes
// in all, less for small times and lifts; the fixed attributes take under
// 150 bytes. (400 KB - 150 B) / 32 B ≈ 12,800. TestAbandonedFullSkierDayIsInvalid
// checks the estimate on a 1 KB item.
// docs/dynamodb.md explains the arithmetic and why that is no real limit.
const RidesPerSkierDayItem = 12_800

// itemTooLarge tells DynamoDB's (and dynalite's) refusal of an update that
// would grow an item past the size limit. It has no error type of its own:
// it is a ValidationException with this message.
func itemTooLarge(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(api.ErrorMessage(), "Item size")
}

// UniqueSkiers counts the resort index's entries for the day: there is one
// item, and so one index entry, per skier, day and resort. Eventually
// consistent, as every index read: a skier-day created in the last moments
// may not be counted yet.
func (s *AbandonedStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	in, err := dayIndexQuery(resortID, season, day)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.query(ctx, "UniqueSkiers", in, func(item) error { n++; return nil })
	return n, err
}

// SkierDayVertical reads the pre-aggregated total of one item.
func (s *AbandonedStore) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	return s.totalVertical(ctx, skierID, skierDaySortKey(season, day, resortID))
}

// SkierSeasonVerticals sums the skier's day totals per resort and season,
// over one Query of the skier's items, for the resorts asked for.
func (s *AbandonedStore) SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	return s.seasonVerticals(ctx, skierID, resortIDs, "", attrTotalVertical)
}

// SkierDays lists the days of the skier's items in the season.
func (s *AbandonedStore) SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	return s.skierDays(ctx, skierID, seasonPrefix(season))
}

// SkierDayRides unpacks the ride lists of the skier's items of the day (one
// per resort visited).
func (s *AbandonedStore) SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	var out []domain.LiftRide
	err := s.querySkier(ctx, "SkierDayRides", skierID, dayPrefix(season, day), 0, func(it item) error {
		resort, err := getNum(it, attrResortID)
		if err != nil {
			return err
		}
		list, ok := it[attrLiftList].(*types.AttributeValueMemberL)
		if !ok {
			return fmt.Errorf("attribute %s is missing or not a list", attrLiftList)
		}
		for _, el := range list.Value {
			m, ok := el.(*types.AttributeValueMemberM)
			if !ok {
				return fmt.Errorf("element of %s is not a map", attrLiftList)
			}
			lift, err := getNum(m.Value, attrLiftID)
			if err != nil {
				return err
			}
			tm, err := getNum(m.Value, attrTime)
			if err != nil {
				return err
			}
			r, err := domain.NewLiftRide(domain.ResortID(resort), season, day, skierID, int32(tm), int32(lift))
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	}, attrResortID, attrLiftList)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, domain.CompareRidesInDay)
	return out, nil
}
