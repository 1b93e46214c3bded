package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/cenkalti/backoff/v5"

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
	// Model is ModelAdopted, ModelAbandoned, ModelCounters or ModelSharded.
	Model string
	// WriteConcurrency is how many write requests AddRides keeps in flight;
	// 0 means 4.
	WriteConcurrency int
	// PageLimit caps the items per Query or Scan page; 0 leaves it to
	// DynamoDB (1 MB pages). Tests set it low to force pagination.
	PageLimit int32
	// Metrics receives the capacity consumed (AddCapacity) and the
	// throttled requests (StoreThrottled), by table and operation; nil
	// discards them.
	Metrics ports.Metrics
	// NewBackOff makes the backoff between retries of throttled requests;
	// nil means exponential from 50 ms to 5 s with jitter. Tests shorten it.
	NewBackOff func() backoff.BackOff
	// ReadRetryTime bounds how long a read request (a Query or Scan page,
	// a GetItem) DynamoDB throttles is sent again before the read fails
	// with ErrUnavailable; 0 means 5 s. Writes retry until their context
	// ends.
	ReadRetryTime time.Duration
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
		return &CountersStore{base: b, resortDays: b.on(cfg.TablePrefix + ResortDayTableName)}, nil
	case ModelSharded:
		return newSharded(b, b.on(cfg.TablePrefix+MarkerTableName)), nil
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
	metrics     ports.Metrics
	newBackOff  func() backoff.BackOff
	readRetry   time.Duration
	*stats
}

// defaultReadRetryTime is Config.ReadRetryTime's default: well inside the
// service's 10 s handler timeout.
const defaultReadRetryTime = 5 * time.Second

func newBase(api API, cfg Config, table string) base {
	conc := cfg.WriteConcurrency
	if conc <= 0 {
		conc = 4
	}
	m := cfg.Metrics
	if m == nil {
		m = ports.NopMetrics{}
	}
	readRetry := cfg.ReadRetryTime
	if readRetry <= 0 {
		readRetry = defaultReadRetryTime
	}
	return base{api: api, table: table, concurrency: conc, pageLimit: cfg.PageLimit, metrics: m,
		newBackOff: cfg.NewBackOff, readRetry: readRetry, stats: &stats{}}
}

// on is the same base for another table of the model: same client,
// settings, counters and metrics.
func (b base) on(table string) base {
	b.table = table
	return b
}

// record counts one request of op and its consumed capacity in the
// benchmark's counters and in the metrics, by table.
func (b *base) record(op string, write bool, ccs ...types.ConsumedCapacity) {
	b.stats.record(op, write, ccs...)
	for _, cc := range ccs {
		units := aws.ToFloat64(cc.CapacityUnits)
		table := aws.ToString(cc.TableName)
		if table == "" {
			table = b.table
		}
		if write {
			b.metrics.AddCapacity(table, op, 0, units)
		} else {
			b.metrics.AddCapacity(table, op, units, 0)
		}
	}
}

// throttled counts n requests of operation DynamoDB throttled.
func (b *base) throttled(operation string, n int) {
	for range n {
		b.metrics.StoreThrottled(b.table, operation)
	}
}

// throttled tells DynamoDB refusing a request for lack of capacity (on
// demand or provisioned), after the SDK's own retries.
func throttled(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

func (b *base) backOff() backoff.BackOff {
	if b.newBackOff != nil {
		return b.newBackOff()
	}
	e := backoff.NewExponentialBackOff() // jitter: RandomizationFactor 0.5
	e.InitialInterval = 50 * time.Millisecond
	e.MaxInterval = 5 * time.Second
	return e
}

// updateItem sends one UpdateItem and, while DynamoDB throttles it, sends
// it again alone with backoff. It counts the request under op, with its
// capacity; a failed condition is billed a write too, but its error
// carries no units, so only the request is counted then.
func (b *base) updateItem(ctx context.Context, op string, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	return backoff.Retry(ctx, func() (*dynamodb.UpdateItemOutput, error) {
		out, err := b.api.UpdateItem(ctx, in, b.countThrottles)
		switch {
		case throttled(err):
			return nil, err // counted per attempt by countThrottles
		case conditionFailed(err):
			b.record(op, true)
			return nil, backoff.Permanent(err)
		case err != nil:
			return nil, backoff.Permanent(err)
		}
		b.record(op, true, capacity(out.ConsumedCapacity)...)
		return out, nil
	}, backoff.WithBackOff(b.backOff()), backoff.WithMaxElapsedTime(0))
}

// retryRead sends one read request (call) and, while DynamoDB throttles
// it, sends it again with the writes' backoff, for at most ReadRetryTime:
// a read answers someone waiting, so past that it fails (the throttle is
// the error) rather than queue behind a hot partition. Each throttled
// attempt is counted by countThrottles, which call must pass.
func retryRead[T any](ctx context.Context, b *base, call func() (T, error)) (T, error) {
	return backoff.Retry(ctx, func() (T, error) {
		out, err := call()
		if err != nil && !throttled(err) {
			return out, backoff.Permanent(err)
		}
		return out, err
	}, backoff.WithBackOff(b.backOff()), backoff.WithMaxElapsedTime(b.readRetry))
}

// query runs in to the end, following LastEvaluatedKey, and hands every
// item to each. Every page is a request counted under op.
func (b *base) query(ctx context.Context, op string, in *dynamodb.QueryInput, each func(item) error) error {
	return b.queryPages(ctx, op, in, func(out *dynamodb.QueryOutput) error {
		for _, it := range out.Items {
			if err := each(it); err != nil {
				return fmt.Errorf("%s: item of %s: %w", op, b.table, err)
			}
		}
		return nil
	})
}

// queryPages runs in to the end, following LastEvaluatedKey, and hands
// every page to each. Every page is a request counted under op; a page
// DynamoDB throttles is sent again (retryRead).
//
// A query of a table is read consistently: it sees every write DynamoDB
// has acknowledged, so once the queue has drained (the persister acks a
// batch only after AddRides returned) it sees every ride, at twice the
// read units of an eventually consistent read. A query of an index
// cannot be (DynamoDB refuses ConsistentRead on a global secondary
// index): it may miss writes of the last moments, usually under a
// second. docs/dynamodb.md, "Read consistency", has the guarantee per
// model and query.
func (b *base) queryPages(ctx context.Context, op string, in *dynamodb.QueryInput, each func(*dynamodb.QueryOutput) error) error {
	in.TableName = aws.String(b.table)
	in.ConsistentRead = aws.Bool(in.IndexName == nil)
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	if b.pageLimit > 0 {
		in.Limit = aws.Int32(b.pageLimit)
	}
	return readPages(ctx, b, op, "query "+b.table,
		func() (*dynamodb.QueryOutput, error) { return b.api.Query(ctx, in, b.countThrottles) },
		func(out *dynamodb.QueryOutput) (*types.ConsumedCapacity, bool) {
			in.ExclusiveStartKey = out.LastEvaluatedKey
			return out.ConsumedCapacity, len(out.LastEvaluatedKey) > 0
		}, each)
}

// readPages sends one page request after another (send, retried while
// throttled) and hands each page to each, until next (which points the
// request at the page after out) says there is none. Every page is a
// request counted under op; what names it in an error.
func readPages[Out any](ctx context.Context, b *base, op, what string, send func() (Out, error), next func(out Out) (used *types.ConsumedCapacity, more bool), each func(Out) error) error {
	for {
		out, err := retryRead(ctx, b, send)
		if err != nil {
			return unavailable(fmt.Errorf("%s: %s: %w", op, what, err))
		}
		used, more := next(out)
		b.record(op, false, capacity(used)...)
		if err := each(out); err != nil || !more {
			return err
		}
	}
}

// scan is query's twin for Scan.
func (b *base) scan(ctx context.Context, op string, in *dynamodb.ScanInput, each func(*dynamodb.ScanOutput) error) error {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	if b.pageLimit > 0 {
		in.Limit = aws.Int32(b.pageLimit)
	}
	return readPages(ctx, b, op, "scan "+aws.ToString(in.TableName),
		func() (*dynamodb.ScanOutput, error) { return b.api.Scan(ctx, in, b.countThrottles) },
		func(out *dynamodb.ScanOutput) (*types.ConsumedCapacity, bool) {
			in.ExclusiveStartKey = out.LastEvaluatedKey
			return out.ConsumedCapacity, len(out.LastEvaluatedKey) > 0
		},
		func(out *dynamodb.ScanOutput) error {
			if err := each(out); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return nil
		})
}

// CountItems implements Store. The Scan is eventually consistent (half
// the read units): it is for benchmarks, run after the writes have
// settled, and serves no request.
func (b *base) CountItems(ctx context.Context) (int64, error) {
	var n int64
	err := b.scan(ctx, "CountItems", &dynamodb.ScanInput{TableName: aws.String(b.table), Select: types.SelectCount},
		func(out *dynamodb.ScanOutput) error { n += int64(out.Count); return nil })
	return n, err
}

// countItems is the items of all the tables.
func countItems(ctx context.Context, tables ...*base) (int64, error) {
	var sum int64
	for _, t := range tables {
		n, err := t.CountItems(ctx)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
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
// It reads consistently, as queryPages does a table.
func (b *base) totalVertical(ctx context.Context, skierID domain.SkierID, sortKey string) (int64, error) {
	const op = "SkierDayVertical"
	expr, err := expression.NewBuilder().WithProjection(namesList(attrTotalVertical)).Build()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	in := &dynamodb.GetItemInput{
		TableName: aws.String(b.table),
		Key: item{
			attrSkierID: numAttr(int64(skierID)),
			attrSortKey: strAttr(sortKey),
		},
		ProjectionExpression:     expr.Projection(),
		ExpressionAttributeNames: expr.Names(),
		ConsistentRead:           aws.Bool(true),
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes,
	}
	out, err := retryRead(ctx, b, func() (*dynamodb.GetItemOutput, error) {
		return b.api.GetItem(ctx, in, b.countThrottles)
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
