package dynamosim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/test/dynamotest"
)

// testLag is the lag model's delay in these tests: a read within it of a
// write must miss the write, so it is long against a request's latency on
// a loaded machine, and short enough that polling past it is quick.
const testLag = 2 * time.Second

func lagClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	px := dynamotest.NewProxy(t, dynamosim.Options{Lag: testLag})
	return dynamosim.ClientFor(px.URL)
}

// indexCount counts the index entries under G = g (Select COUNT).
func indexCount(t *testing.T, c *dynamodb.Client, table, g string) int32 {
	t.Helper()
	in := indexQuery(table, g)
	in.Select = types.SelectCount
	out, err := c.Query(dynamotest.Context(t), in)
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// indexQuery asks the index for the entries of G = g.
func indexQuery(table, g string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String("g-index"),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": "G"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s(g)},
	}
}

// tableItems reads the items of PK = pk, consistently or not, projecting V.
func tableItems(t *testing.T, c *dynamodb.Client, table string, pk int, consistent bool) []map[string]types.AttributeValue {
	t.Helper()
	out, err := c.Query(dynamotest.Context(t), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#k = :k"),
		ProjectionExpression:      aws.String("#v"),
		ExpressionAttributeNames:  map[string]string{"#k": "PK", "#v": "V"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": n(pk)},
		ConsistentRead:            aws.Bool(consistent),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// A new item's index entry is missing from index queries for the lag, and
// then appears; a consistent read of the table sees the item at once, an
// eventually consistent one only after the lag.
func TestLagHidesANewItemFromIndexAndEventualReads(t *testing.T) {
	t.Parallel()
	c := lagClient(t)
	table := newTable(t, c)
	start := time.Now()
	_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("a"), "G": s("r"), "GS": s("1"), "V": n(7)}})
	if err != nil {
		t.Fatal(err)
	}
	indexed := indexCount(t, c, table, "r")
	eventual := len(tableItems(t, c, table, 1, false))
	dynamotest.WithinLag(t, start, testLag)
	if indexed != 0 {
		t.Errorf("index query right after the write counted %d entries; want 0 (the index lags)", indexed)
	}
	if eventual != 0 {
		t.Errorf("eventually consistent read right after the write saw %d items; want 0", eventual)
	}
	if got := tableItems(t, c, table, 1, true); len(got) != 1 || got[0]["V"].(*types.AttributeValueMemberN).Value != "7" || len(got[0]) != 1 {
		t.Errorf("consistent read right after the write = %v; want the item, V only", got)
	}
	dynamotest.Eventually(t, "the index entry after the lag", func() string {
		if got := indexCount(t, c, table, "r"); got != 1 {
			return fmt.Sprintf("%d entries", got)
		}
		return ""
	})
	if took := time.Since(start); took < testLag {
		t.Errorf("the index entry appeared %v after the write was sent; want no sooner than the lag, %v", took, testLag)
	}
	if got := tableItems(t, c, table, 1, false); len(got) != 1 || len(got[0]) != 1 {
		t.Errorf("eventually consistent read after the lag = %v; want the item, V only", got)
	}
}

// An update is seen by eventually consistent reads as the item before it
// for the lag, projected as asked; a consistent read sees the update.
func TestLagShowsTheOldImageOfAnUpdatedItem(t *testing.T) {
	t.Parallel()
	c := lagClient(t)
	table := newTable(t, c)
	// Written to dynalite directly: no lag on the first image.
	_, err := dynamosim.ClientFor(dynamotest.Upstream(t)).PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("a"), "V": n(1)}})
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"PK": n(1), "SK": s("a")}
	get := func(consistent bool) string {
		out, err := c.GetItem(dynamotest.Context(t), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key,
			ProjectionExpression: aws.String("V"), ConsistentRead: aws.Bool(consistent)})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := out.Item["V"].(*types.AttributeValueMemberN); ok && len(out.Item) == 1 {
			return v.Value
		}
		return fmt.Sprint(out.Item)
	}
	start := time.Now()
	_, err = c.UpdateItem(dynamotest.Context(t), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
		UpdateExpression:          aws.String("SET #v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "V"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(2)}})
	if err != nil {
		t.Fatal(err)
	}
	eventualGet := get(false)
	eventualQuery := tableItems(t, c, table, 1, false)
	dynamotest.WithinLag(t, start, testLag)
	if eventualGet != "1" {
		t.Errorf("eventually consistent GetItem right after the update: V = %s; want the old 1", eventualGet)
	}
	if len(eventualQuery) != 1 || eventualQuery[0]["V"].(*types.AttributeValueMemberN).Value != "1" || len(eventualQuery[0]) != 1 {
		t.Errorf("eventually consistent Query right after the update = %v; want the old item, V only", eventualQuery)
	}
	if got := get(true); got != "2" {
		t.Errorf("consistent GetItem right after the update: V = %s; want 2", got)
	}
	dynamotest.Eventually(t, "the update seen by an eventually consistent read", func() string {
		if got := get(false); got != "2" {
			return "V = " + got
		}
		return ""
	})
}

// Without Options.Lag (every test's default) a read right after a write
// sees it, as on dynalite.
func TestNoLagByDefault(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("a"), "G": s("r"), "GS": s("1"), "V": n(7)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := indexCount(t, c, table, "r"); got != 1 {
		t.Errorf("index query right after the write counted %d; want 1", got)
	}
	if got := tableItems(t, c, table, 1, false); len(got) != 1 {
		t.Errorf("eventually consistent read right after the write saw %d items; want 1", len(got))
	}
}

// A global secondary index cannot be read consistently: AWS refuses it,
// and so does dynalite (the adapter must not ask).
func TestConsistentReadOfAnIndexIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	in := indexQuery(table, "r")
	in.ConsistentRead = aws.Bool(true)
	_, err := c.Query(dynamotest.Context(t), in)
	wantRefused(t, err, "ValidationException", "Consistent reads are not supported on global secondary indexes")
}
