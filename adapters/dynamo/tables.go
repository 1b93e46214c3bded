package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The data models; Config.Model takes one of them.
const (
	ModelAdopted   = "adopted"
	ModelAbandoned = "abandoned"
	ModelCounters  = "counters"
	ModelSharded   = "sharded"
)

// Models lists every model, in the order the docs present them.
var Models = []string{ModelAdopted, ModelAbandoned, ModelCounters, ModelSharded}

// Table, index and attribute names. They are the schema: the CloudFormation
// template must match TableDefinitions (a test compares them).
const (
	SkierTableName  = "skierTable"
	ResortTableName = "resortTable"
	// ResortDayTableName is the counters model's table of resort-day
	// shards: SkierCount and Skiers per (resort, season, day, shard).
	ResortDayTableName = "resortDayTable"
	// MarkerTableName is the sharded model's table of skier-day markers
	// under a write-sharded resort-day key.
	MarkerTableName = "skierDayMarkerTable"
	ResortIndexName = "resort-index"

	attrSkierID        = "SkierID"        // skier table partition key (N)
	attrSortKey        = "SortKey"        // skier table sort key (S), see keys.go
	attrResortID       = "ResortID"       // GSI partition key and resort table key (N)
	attrSeasonDaySkier = "SeasonDaySkier" // GSI sort key (S): season#day#skier
	attrSeasonID       = "SeasonID"
	attrDayID          = "DayID"
	attrTime           = "Time"
	attrLiftID         = "LiftID"
	attrVertical       = "Vertical"      // adopted: one ride's vertical
	attrLiftList       = "LiftList"      // abandoned: list of {LiftID, Time}
	attrTotalVertical  = "TotalVertical" // abandoned: sum over LiftList
	attrRideKeys       = "RideKeys"      // abandoned: string set of ride ids
	attrName           = "Name"          // resort table
	attrSeasons        = "Seasons"       // resort table: string set
)

func validModel(model string) error {
	if !slices.Contains(Models, model) {
		return fmt.Errorf("dynamo: model must be one of %s, got %q", strings.Join(Models, ", "), model)
	}
	return nil
}

// TableDefinitions returns the tables a model needs, with the prefix applied:
// the one place the schema is written down. Both models key the skier table
// the same way (skier, then a sort key whose content differs by model) and
// index it by resort the same way; what differs is the items.
//
// The GSI projects KEYS_ONLY: its one query (distinct skiers of a resort
// day) needs only SkierID, which every index projects as the table's
// partition key; anything more would make every index write and read larger.
func TableDefinitions(prefix, model string) ([]*dynamodb.CreateTableInput, error) {
	if err := validModel(model); err != nil {
		return nil, err
	}
	skiers := keyedTable(prefix+SkierTableName, key{attrSkierID, types.ScalarAttributeTypeN}, key{attrSortKey, types.ScalarAttributeTypeS})
	skiers.AttributeDefinitions = append(skiers.AttributeDefinitions,
		types.AttributeDefinition{AttributeName: aws.String(attrResortID), AttributeType: types.ScalarAttributeTypeN},
		types.AttributeDefinition{AttributeName: aws.String(attrSeasonDaySkier), AttributeType: types.ScalarAttributeTypeS},
	)
	skiers.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
		IndexName: aws.String(ResortIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrResortID), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSeasonDaySkier), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}}
	resorts := keyedTable(prefix+ResortTableName, key{attrResortID, types.ScalarAttributeTypeN})
	if model == ModelAdopted || model == ModelAbandoned {
		return []*dynamodb.CreateTableInput{skiers, resorts}, nil
	}
	// The counters and sharded models answer UniqueSkiers from a table of
	// their own, so their skier table has no index: one write unit a ride
	// instead of two, and no resort-wide key.
	skiers.GlobalSecondaryIndexes = nil
	skiers.AttributeDefinitions = skiers.AttributeDefinitions[:2]
	if model == ModelSharded {
		markers := keyedTable(prefix+MarkerTableName, key{attrResortDayShard, types.ScalarAttributeTypeS}, key{attrSkierID, types.ScalarAttributeTypeN})
		return []*dynamodb.CreateTableInput{skiers, resorts, markers}, nil
	}
	resortDays := keyedTable(prefix+ResortDayTableName, key{attrResortID, types.ScalarAttributeTypeN}, key{attrSortKey, types.ScalarAttributeTypeS})
	return []*dynamodb.CreateTableInput{skiers, resorts, resortDays}, nil
}

// key is one attribute of a table's primary key.
type key struct {
	name string
	typ  types.ScalarAttributeType
}

// keyedTable is an on-demand table keyed by hash, then range when there is
// a second key.
func keyedTable(name string, hash key, rng ...key) *dynamodb.CreateTableInput {
	t := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	for i, k := range append([]key{hash}, rng...) {
		kt := types.KeyTypeHash
		if i > 0 {
			kt = types.KeyTypeRange
		}
		t.AttributeDefinitions = append(t.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k.name), AttributeType: k.typ})
		t.KeySchema = append(t.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: kt})
	}
	return t
}

// CreateTables creates the model's tables and waits until they are active.
// A table that already exists is left as it is, so running it twice is fine.
func CreateTables(ctx context.Context, client TableAPI, prefix, model string) error {
	defs, err := TableDefinitions(prefix, model)
	if err != nil {
		return err
	}
	for _, def := range defs {
		_, err := client.CreateTable(ctx, def)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", *def.TableName, err)
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		// The SDK's default first wait is 20 s; a new on-demand table (and
		// dynalite's) is usually active in well under that.
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	for _, def := range defs {
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName}, 5*time.Minute); err != nil {
			return fmt.Errorf("wait for table %s to be active: %w", *def.TableName, err)
		}
	}
	return nil
}

// DescribeTables returns a printable description of the model's tables as
// DynamoDB reports them: status, keys, indexes, billing and item counts.
func DescribeTables(ctx context.Context, client TableAPI, prefix, model string) (string, error) {
	defs, err := TableDefinitions(prefix, model)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, def := range defs {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
		if err != nil {
			return "", fmt.Errorf("describe table %s: %w", *def.TableName, err)
		}
		t := out.Table
		billing := "PROVISIONED"
		if t.BillingModeSummary != nil {
			billing = string(t.BillingModeSummary.BillingMode)
		}
		fmt.Fprintf(&b, "table %s: %s, billing %s, keys %s, ~%d items, ~%d bytes\n",
			aws.ToString(t.TableName), t.TableStatus, billing, keys(t.KeySchema), aws.ToInt64(t.ItemCount), aws.ToInt64(t.TableSizeBytes))
		for _, g := range t.GlobalSecondaryIndexes {
			proj := ""
			if g.Projection != nil {
				proj = string(g.Projection.ProjectionType)
			}
			fmt.Fprintf(&b, "  index %s: %s, keys %s, projection %s\n", aws.ToString(g.IndexName), g.IndexStatus, keys(g.KeySchema), proj)
		}
	}
	return b.String(), nil
}

func keys(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + " " + string(k.KeyType)
	}
	return strings.Join(parts, ", ")
}
