package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Config selects the tables and the model. Credentials are not here: they
// come from the SDK's default chain (environment, shared config, role).
type Config struct {
	// Region of the tables; empty means the default chain's (AWS_REGION).
	Region string
	// Endpoint overrides the service URL, for a local server such as
	// dynalite; empty means AWS.
	Endpoint string
	// TablePrefix is put before every table name, so several deployments
	// or models can share an account: "<prefix>skierTable".
	TablePrefix string
	// Model is ModelAdopted, ModelAbandoned or ModelCounters.
	Model string
	// WriteConcurrency is how many write requests AddRides keeps in flight;
	// 0 means 4.
	WriteConcurrency int
	// PageLimit caps the items per Query or Scan page; 0 leaves it to
	// DynamoDB (1 MB pages). Tests set it low to force pagination.
	PageLimit int32
}

// Store is a RideStore that also reports its costs for the benchmark.
type Store interface {
	ports.RideStore
	Capacity
	// CountItems counts the items in the skier table (a full Scan with
	// Select COUNT: for benchmarks, never for serving requests).
	CountItems(ctx context.Context) (int64, error)
}

// NewClient builds a DynamoDB client from the default credential chain,
// with cfg's region and endpoint.
func NewClient(ctx context.Context, cfg Config) (*dynamodb.Client, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		// The SDK would fail every request with the same complaint; say it
		// once, at start-up, with the fix.
		return nil, errors.New("DynamoDB region missing: set --dynamo-region, SKI_DYNAMO_REGION or AWS_REGION")
	}
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// Open connects with NewClient and returns the ride store of cfg's model
// and the resort store. The tables must exist (CreateTables).
func Open(ctx context.Context, cfg Config) (Store, *ResortStore, error) {
	client, err := NewClient(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	rides, err := NewRideStore(client, cfg)
	if err != nil {
		return nil, nil, err
	}
	return rides, NewResortStore(client, cfg), nil
}

// NewRideStore returns the ride store of cfg's model on the given client.
func NewRideStore(api API, cfg Config) (Store, error) {
	if err := validModel(cfg.Model); err != nil {
		return nil, err
	}
	b := newBase(api, cfg, cfg.TablePrefix+SkierTableName)
	switch cfg.Model {
	case ModelAdopted:
		return &AdoptedStore{base: b}, nil
	case ModelCounters:
		rd := newBase(api, cfg, cfg.TablePrefix+ResortDayTableName)
		rd.stats = b.stats // one set of counters per store
		return &CountersStore{base: b, rides: AdoptedStore{base: b}, resortDays: rd}, nil
	default:
		return &AbandonedStore{base: b}, nil
	}
}

// base is what both models share: the client, the table, the counters and
// the paginated reads.
type base struct {
	api         API
	table       string
	concurrency int
	pageLimit   int32
	*stats
}

func newBase(api API, cfg Config, table string) base {
	conc := cfg.WriteConcurrency
	if conc <= 0 {
		conc = 4
	}
	return base{api: api, table: table, concurrency: conc, pageLimit: cfg.PageLimit, stats: &stats{}}
}

// query runs in to the end, following LastEvaluatedKey, and hands every
// item to each. Every page is a request counted under op.
func (b *base) query(ctx context.Context, op string, in *dynamodb.QueryInput, each func(item) error) error {
	in.TableName = aws.String(b.table)
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	if b.pageLimit > 0 {
		in.Limit = aws.Int32(b.pageLimit)
	}
	for {
		out, err := b.api.Query(ctx, in)
		if err != nil {
			return unavailable(fmt.Errorf("%s: query %s: %w", op, b.table, err))
		}
		b.record(op, false, capacity(out.ConsumedCapacity)...)
		for _, it := range out.Items {
			if err := each(it); err != nil {
				return fmt.Errorf("%s: item of %s: %w", op, b.table, err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// scan is query's twin for Scan.
func (b *base) scan(ctx context.Context, op string, in *dynamodb.ScanInput, each func(*dynamodb.ScanOutput) error) error {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	if b.pageLimit > 0 {
		in.Limit = aws.Int32(b.pageLimit)
	}
	for {
		out, err := b.api.Scan(ctx, in)
		if err != nil {
			return unavailable(fmt.Errorf("%s: scan %s: %w", op, aws.ToString(in.TableName), err))
		}
		b.record(op, false, capacity(out.ConsumedCapacity)...)
		if err := each(out); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// CountItems implements Store.
func (b *base) CountItems(ctx context.Context) (int64, error) {
	var n int64
	err := b.scan(ctx, "CountItems", &dynamodb.ScanInput{TableName: aws.String(b.table), Select: types.SelectCount},
		func(out *dynamodb.ScanOutput) error { n += int64(out.Count); return nil })
	return n, err
}

func capacity(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}

// unavailable marks a failed call to DynamoDB as the store being
// unavailable (the SDK has already retried what it could), keeping the
// cause; a context error is passed on as it is.
func unavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &wrapped{kind: domain.ErrUnavailable, err: err}
}

// wrapped lets one error match both its domain kind and its cause with
// errors.Is / errors.As.
type wrapped struct {
	kind error
	err  error
}

func (w *wrapped) Error() string   { return w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.err} }

// totalVertical reads the pre-aggregated TotalVertical of one skier-day item
// (the abandoned and counters models keep one); 0 when there is no item.
func (b *base) totalVertical(ctx context.Context, skierID domain.SkierID, sortKey string) (int64, error) {
	const op = "SkierDayVertical"
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.table),
		Key: item{
			attrSkierID: numAttr(int64(skierID)),
			attrSortKey: strAttr(sortKey),
		},
		ProjectionExpression:     aws.String("#t"),
		ExpressionAttributeNames: map[string]string{"#t": attrTotalVertical},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		return 0, unavailable(fmt.Errorf("%s: get item: %w", op, err))
	}
	b.record(op, false, capacity(out.ConsumedCapacity)...)
	if len(out.Item) == 0 {
		return 0, nil
	}
	v, err := getNum(out.Item, attrTotalVertical)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}
