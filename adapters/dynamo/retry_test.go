package dynamo

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/cenkalti/backoff/v5"

	"github.com/skidata/skidata/domain"
)

// throttlingAPI plays a throttled table: each BatchWriteItem writes only
// its first item and hands the rest back as UnprocessedItems, as DynamoDB
// does under throttling (dynalite never throttles). It records what it
// wrote and how many duplicate keys a single request carried.
type throttlingAPI struct {
	API        // unused methods panic
	mu         sync.Mutex
	calls      int
	written    map[string]int // sort key -> times written
	duplicates int
}

func (f *throttlingAPI) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
	for table, reqs := range in.RequestItems {
		seen := map[string]bool{}
		for _, r := range reqs {
			k := r.PutRequest.Item[attrSkierID].(*types.AttributeValueMemberN).Value + "|" +
				r.PutRequest.Item[attrSortKey].(*types.AttributeValueMemberS).Value
			if seen[k] {
				f.duplicates++
			}
			seen[k] = true
		}
		f.written[keyOf(reqs[0])]++
		if len(reqs) > 1 {
			out.UnprocessedItems[table] = reqs[1:]
		}
		out.ConsumedCapacity = append(out.ConsumedCapacity, types.ConsumedCapacity{TableName: aws.String(table), CapacityUnits: aws.Float64(1)})
	}
	if len(out.UnprocessedItems) == 0 {
		out.UnprocessedItems = nil
	}
	return out, nil
}

func keyOf(r types.WriteRequest) string {
	return r.PutRequest.Item[attrSortKey].(*types.AttributeValueMemberS).Value
}

func quickBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Millisecond
	b.MaxInterval = 5 * time.Millisecond
	return b
}

func TestAdoptedRetriesUnprocessedItemsUntilWritten(t *testing.T) {
	api := &throttlingAPI{written: map[string]int{}}
	s := &AdoptedStore{base: newBase(api, Config{Model: ModelAdopted, WriteConcurrency: 2, NewBackOff: quickBackOff}, "skierTable")}
	var rides []domain.LiftRide
	for tm := range int32(30) {
		r, _ := domain.NewLiftRide(1, domain.MustSeason("2024"), domain.MustDay(1), 7, tm, 2)
		rides = append(rides, r, r) // each twice: dedupe must keep requests valid
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.AddRides(ctx, rides); err != nil {
		t.Fatalf("AddRides against a throttling table: %v", err)
	}
	if len(api.written) != 30 {
		t.Errorf("distinct rides written = %d; want 30", len(api.written))
	}
	for k, n := range api.written {
		if n != 1 {
			t.Errorf("ride %s written %d times; want once", k, n)
		}
	}
	if api.duplicates != 0 {
		t.Errorf("%d duplicate keys sent within one request; DynamoDB rejects those", api.duplicates)
	}
	// 30 rides in chunks of 25 and 5, one item written per call.
	if api.calls != 30 {
		t.Errorf("BatchWriteItem calls = %d; want 30 (first sends plus a retry per unprocessed remainder)", api.calls)
	}
	if st := s.Stats()["AddRides"]; st.Requests != 30 || st.WriteCU != 30 {
		t.Errorf("AddRides stats = %+v; want 30 requests and 30 WCU", st)
	}
}

func TestAdoptedUnprocessedRetryStopsWithContext(t *testing.T) {
	api := &neverWritesAPI{}
	s := &AdoptedStore{base: newBase(api, Config{Model: ModelAdopted, NewBackOff: quickBackOff}, "skierTable")}
	r, _ := domain.NewLiftRide(1, domain.MustSeason("2024"), domain.MustDay(1), 7, 1, 2)
	ctx, cancel := context.WithCancel(context.Background())
	api.afterCalls, api.cancel = 3, cancel
	err := s.AddRides(ctx, []domain.LiftRide{r})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("AddRides when nothing is ever processed and the context ends = %v; want context.Canceled", err)
	}
}

// neverWritesAPI leaves everything unprocessed and cancels the caller's
// context after a few calls.
type neverWritesAPI struct {
	API
	calls, afterCalls int
	cancel            context.CancelFunc
}

func (f *neverWritesAPI) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.calls++
	if f.calls == f.afterCalls {
		f.cancel()
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: in.RequestItems}, nil
}

// throttledScanAPI refuses the first throttles Scans as DynamoDB does a
// throttled request (after the SDK's own retries), then counts one item a
// page.
type throttledScanAPI struct {
	API
	calls, throttles int
}

func (f *throttledScanAPI) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	f.calls++
	if f.calls <= f.throttles {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("injected")}
	}
	return &dynamodb.ScanOutput{Count: 1}, nil
}

func TestScanRetriesThrottledRequests(t *testing.T) {
	api := &throttledScanAPI{throttles: 3}
	b := newBase(api, Config{Model: ModelAdopted, NewBackOff: quickBackOff}, "skierTable")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := b.CountItems(ctx)
	if err != nil || n != 1 {
		t.Fatalf("CountItems with 3 throttled Scans = %d, %v; want 1 after retrying", n, err)
	}
	if api.calls != 4 {
		t.Errorf("Scan calls = %d; want 3 throttled and 1 answered", api.calls)
	}
}

func TestThrottledReadGivesUpAfterReadRetryTime(t *testing.T) {
	api := &throttledScanAPI{throttles: 1 << 30}
	b := newBase(api, Config{Model: ModelAdopted, NewBackOff: quickBackOff, ReadRetryTime: 50 * time.Millisecond}, "skierTable")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := b.CountItems(ctx)
	if !errors.Is(err, domain.ErrUnavailable) || !throttled(err) {
		t.Fatalf("CountItems on a table that never stops throttling = %v; want ErrUnavailable carrying the throttle", err)
	}
	if ctx.Err() != nil {
		t.Error("the read retried until the caller's context ended; want it bounded by ReadRetryTime")
	}
	if api.calls < 2 {
		t.Errorf("Scan calls = %d; want the throttled read retried before giving up", api.calls)
	}
}
