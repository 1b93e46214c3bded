package dynamo

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/skidata/skidata/ports"
)

// countThrottles is the option every call of the store's gets: see
// throttleCounter.
func (b *base) countThrottles(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, throttleCounter(b.metrics))
}

// throttleCounter counts, in m, every attempt DynamoDB refuses for lack of
// capacity, including those the SDK's retryer sends again by itself before
// the adapter sees an error: a hot key shows in skidata_store_throttled_total
// even when the retries succeed. A refused BatchWriteItem counts each of its
// requests; requests DynamoDB hands back unprocessed are not errors and are
// counted where the adapter sends them again (writeBatch).
func throttleCounter(m ports.Metrics) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("skidataThrottleTarget",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				return next.HandleInitialize(context.WithValue(ctx, throttleTargetKey{}, targetOf(in.Parameters)), in)
			}), middleware.Before); err != nil {
			return err
		}
		// After the retry middleware, so that it sees every attempt.
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("skidataCountThrottles",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if throttled(err) {
					t, _ := ctx.Value(throttleTargetKey{}).(throttleTarget)
					for range max(t.requests, 1) {
						m.StoreThrottled(t.table, awsmiddleware.GetOperationName(ctx))
					}
				}
				return out, md, err
			}), "Retry", middleware.After)
	}
}

type throttleTargetKey struct{}

// throttleTarget is the table an operation addresses and how many requests
// it carries (a batch's items; 1 otherwise).
type throttleTarget struct {
	table    string
	requests int
}

func targetOf(params any) throttleTarget {
	switch in := params.(type) {
	case *dynamodb.BatchWriteItemInput:
		tables := make([]string, 0, len(in.RequestItems))
		for t := range in.RequestItems {
			tables = append(tables, t)
		}
		slices.Sort(tables)
		t := throttleTarget{requests: countRequests(in.RequestItems)}
		if len(tables) > 0 {
			t.table = tables[0]
		}
		return t
	case *dynamodb.UpdateItemInput:
		return throttleTarget{table: aws.ToString(in.TableName), requests: 1}
	case *dynamodb.QueryInput:
		return throttleTarget{table: aws.ToString(in.TableName), requests: 1}
	case *dynamodb.GetItemInput:
		return throttleTarget{table: aws.ToString(in.TableName), requests: 1}
	case *dynamodb.PutItemInput:
		return throttleTarget{table: aws.ToString(in.TableName), requests: 1}
	case *dynamodb.ScanInput:
		return throttleTarget{table: aws.ToString(in.TableName), requests: 1}
	}
	return throttleTarget{requests: 1}
}
