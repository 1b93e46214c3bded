package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// dynamoPrefix is the table prefix of the sqs-dynamo mode's tables.
const dynamoPrefix = "nemesis_"

// dynamoStore is the sharded DynamoDB model (the production model,
// docs/dynamodb.md) on dynalite behind dynamosim's strict proxy, as the
// tests run it; its tables made with `skiapi tables create` and its demo
// resorts seeded before the processes start. dynalite keeps nothing
// across a restart, where DynamoDB loses no acknowledged write, so it is
// never restarted: the links partition it, cut it and slow it instead.
func dynamoStore(context.Context, env) (*started, error) {
	srv, err := dynamosim.Start()
	if err != nil {
		return nil, fmt.Errorf("start dynalite: %w", err)
	}
	flags := func(endpoint string) []string {
		return []string{"--store", "dynamo-" + dynamo.ModelSharded, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", dynamoPrefix}
	}
	return &started{
		servers: []server{standIn{label: "dynamodb", address: strings.TrimPrefix(srv.Endpoint, "http://")}},
		flags:   func(addrs []string) []string { return flags("http://" + addrs[0]) },
		prepare: [][]string{append([]string{"tables", "create"}, flags(srv.Endpoint)...), append([]string{"seed"}, flags(srv.Endpoint)...)},
		environ: awsEnv,
		rides:   func(ctx context.Context) (Stored, error) { return dynamoRides(ctx, dynamosim.ClientFor(srv.Upstream)) },
		stop: func(string) error {
			srv.Stop()
			return nil
		},
	}, nil
}

// dynamoRides reads every ride item of the sharded model's skier table
// (one item a ride, keyed by the skier and the ride's identity), straight
// from dynalite with consistent reads.
func dynamoRides(ctx context.Context, c *dynamodb.Client) (Stored, error) {
	out := Stored{}
	pages := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(dynamoPrefix + dynamo.SkierTableName), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the stored rides: %w", err)
		}
		for _, it := range page.Items {
			r, err := itemRide(it)
			if err != nil {
				return nil, fmt.Errorf("read the stored rides: item %v: %w", it, err)
			}
			out[r]++
		}
	}
	return out, nil
}

// itemRide is the ride a skier-table item holds, from the attributes the
// queries read back (ResortID, SeasonID, DayID, SkierID, Time, LiftID).
func itemRide(it map[string]types.AttributeValue) (loadgen.Ride, error) {
	var v [6]int32
	for i, name := range []string{"ResortID", "SeasonID", "DayID", "SkierID", "Time", "LiftID"} {
		var s string
		switch a := it[name].(type) {
		case *types.AttributeValueMemberN:
			s = a.Value
		case *types.AttributeValueMemberS:
			s = a.Value
		default:
			return loadgen.Ride{}, fmt.Errorf("no attribute %s", name)
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return loadgen.Ride{}, fmt.Errorf("attribute %s: %w", name, err)
		}
		v[i] = int32(n)
	}
	return loadgen.Ride{ResortID: v[0], Season: v[1], Day: v[2], SkierID: v[3], Time: v[4], LiftID: v[5]}, nil
}
