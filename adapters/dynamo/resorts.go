package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// ResortStore keeps the reference data in "<prefix>resortTable", one item
// per resort: its name and a string set of its seasons. Both ride models
// share it.
type ResortStore struct {
	base
}

var _ ports.ResortStore = (*ResortStore)(nil)

// NewResortStore returns the resort store on the given client.
func NewResortStore(api API, cfg Config) *ResortStore {
	return &ResortStore{base: newBase(api, cfg, cfg.TablePrefix+ResortTableName)}
}

// Resorts scans the table (a few dozen items at most) and sorts by id.
// The Scan is consistent: a resort or season just put (PutResort and
// AddSeason write synchronously, not through the queue) is listed at
// once, for 1 read unit instead of 0.5 on a table this small.
func (s *ResortStore) Resorts(ctx context.Context) ([]domain.Resort, error) {
	var out []domain.Resort
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)}
	err := s.scan(ctx, "Resorts", in, func(page *dynamodb.ScanOutput) error {
		for _, it := range page.Items {
			id, err := getNum(it, attrResortID)
			if err != nil {
				return err
			}
			name, err := getStr(it, attrName)
			if err != nil {
				return err
			}
			r := domain.Resort{ID: domain.ResortID(id), Name: name}
			if ss, ok := it[attrSeasons].(*types.AttributeValueMemberSS); ok {
				for _, v := range ss.Value {
					season, err := domain.ParseSeason(v)
					if err != nil {
						return fmt.Errorf("resort %d: attribute %s: %w", id, attrSeasons, err)
					}
					r = r.WithSeason(season)
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b domain.Resort) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PutResort sets the name and adds the resort's seasons to the set, so
// seasons registered earlier stay.
func (s *ResortStore) PutResort(ctx context.Context, r domain.Resort) error {
	update := expression.Set(expression.Name(attrName), expression.Value(r.Name))
	if len(r.Seasons) > 0 { // a string set cannot be empty
		seasons := make([]string, len(r.Seasons))
		for i, season := range r.Seasons {
			seasons[i] = season.String()
		}
		update = update.Add(expression.Name(attrSeasons), expression.Value(types.AttributeValueMemberSS{Value: seasons}))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("put resort %d: %w", r.ID, err)
	}
	_, err = s.updateItem(ctx, "PutResort", &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       item{attrResortID: numAttr(int64(r.ID))},
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return unavailable(fmt.Errorf("put resort %d: %w", r.ID, err))
	}
	return nil
}

// AddSeason adds the season to an existing resort's set; the condition
// keeps it from creating a nameless resort.
func (s *ResortStore) AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error {
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Add(expression.Name(attrSeasons), expression.Value(types.AttributeValueMemberSS{Value: []string{season.String()}}))).
		WithCondition(expression.Name(attrResortID).AttributeExists()).
		Build()
	if err != nil {
		return fmt.Errorf("add season %s to resort %d: %w", season, resortID, err)
	}
	_, err = s.updateItem(ctx, "AddSeason", &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       item{attrResortID: numAttr(int64(resortID))},
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	switch {
	case conditionFailed(err):
		return domain.NotFound("resort %d does not exist", resortID)
	case err != nil:
		return unavailable(fmt.Errorf("add season %s to resort %d: %w", season, resortID, err))
	}
	return nil
}

// Ping reads one absent item of the resort table: it fails when the
// endpoint, the credentials or the table are missing, for readiness checks.
func (s *ResortStore) Ping(ctx context.Context) error {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(s.table),
		Key:                    item{attrResortID: numAttr(0)},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		return unavailable(fmt.Errorf("ping %s: %w", s.table, err))
	}
	s.record("Ping", false, capacity(out.ConsumedCapacity)...)
	return nil
}
