package dynamo

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/domain"
)

// Every expression is made by the SDK's expression builder: it names every
// attribute and value it uses and nothing else (AWS refuses unused
// placeholders), and escapes reserved words.

// skierQuery is the Query of one skier's items whose sort key starts with
// prefix, keeping those of resort when resort is not 0, with the named
// attributes (all when none). An empty prefix means no sort-key condition
// at all: AWS refuses an empty string as a key value, even in begins_with.
func skierQuery(skierID domain.SkierID, prefix string, resort domain.ResortID, projection ...string) (*dynamodb.QueryInput, error) {
	kc := expression.Key(attrSkierID).Equal(expression.Value(skierID))
	if prefix != "" {
		kc = kc.And(expression.Key(attrSortKey).BeginsWith(prefix))
	}
	b := expression.NewBuilder().WithKeyCondition(kc)
	if resort != 0 {
		// A filter still reads (and bills) the other resorts' items: a
		// skier rides at few resorts, so the key stays skier-first.
		b = b.WithFilter(expression.Name(attrResortID).Equal(expression.Value(resort)))
	}
	if len(projection) > 0 {
		b = b.WithProjection(namesList(projection...))
	}
	return queryInput(b)
}

func namesList(names ...string) expression.ProjectionBuilder {
	nbs := make([]expression.NameBuilder, len(names))
	for i, n := range names {
		nbs[i] = expression.Name(n)
	}
	return expression.NamesList(nbs[0], nbs[1:]...)
}

// queryInput turns a built expression into a Query's expression fields.
func queryInput(b expression.Builder) (*dynamodb.QueryInput, error) {
	expr, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("build query expression: %w", err)
	}
	return &dynamodb.QueryInput{
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// querySkier runs skierQuery.
func (b *base) querySkier(ctx context.Context, op string, skierID domain.SkierID, prefix string, resort domain.ResortID, each func(item) error, projection ...string) error {
	in, err := skierQuery(skierID, prefix, resort, projection...)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return b.query(ctx, op, in, each)
}

// rideItems reads the skier's one-item-per-ride items under prefix (the
// adopted, counters and sharded models keep rides that way) in the order
// ports.RideStore.SkierDayRides promises.
func (b *base) rideItems(ctx context.Context, op string, skierID domain.SkierID, prefix string) ([]domain.LiftRide, error) {
	var out []domain.LiftRide
	err := b.querySkier(ctx, op, skierID, prefix, 0, func(it item) error {
		r, err := itemRide(it)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, domain.CompareRidesInDay)
	return out, nil
}

// dayIndexQuery is the Query of the resort index's entries of one day.
func dayIndexQuery(resortID domain.ResortID, season domain.Season, day domain.Day) (*dynamodb.QueryInput, error) {
	in, err := queryInput(expression.NewBuilder().
		WithKeyCondition(expression.Key(attrResortID).Equal(expression.Value(resortID)).
			And(expression.Key(attrSeasonDaySkier).BeginsWith(dayPrefix(season, day)))).
		WithProjection(namesList(attrSkierID)))
	if err != nil {
		return nil, err
	}
	in.IndexName = &[]string{ResortIndexName}[0]
	return in, nil
}
