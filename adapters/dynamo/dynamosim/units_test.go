package dynamosim_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/test/dynamotest"
)

// The write-unit rules of AWS that the proxy bills, each on newTable's
// table (PK N, SK S; index g-index on G, GS, KEYS_ONLY).

// billed is the write units the proxy accounted so far per partition key
// value of table: "" names the table's partition 7, other keys the index
// partitions.
// wantTableUnits checks the write units billed to table's partition 7;
// why lists what they were billed for.
func wantTableUnits(t *testing.T, px *dynamosim.Proxy, table string, want float64, why string) {
	t.Helper()
	if got := billed(px, table)[""]; got != want {
		t.Errorf("table units = %v; want %v (%s)", got, want, why)
	}
}

func billed(px *dynamosim.Proxy, table string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range px.Partitions() {
		if p.Table != table {
			continue
		}
		if p.Index == "" {
			out[""] += p.WriteUnits
		} else {
			out[p.Key] += p.WriteUnits
		}
	}
	return out
}

// unitsProxy is a proxy of its own (so its accounting is the test's), a
// client of it and newTable's table.
func unitsProxy(t *testing.T) (*dynamosim.Proxy, *dynamodb.Client, string) {
	t.Helper()
	px := dynamotest.NewProxy(t, dynamosim.Options{})
	c := dynamosim.ClientFor(px.URL, noRetry)
	return px, c, newTable(t, c)
}

// pad is a string attribute that brings an item of the other attributes
// (of the given bytes) to total bytes: its name "Data" is 4 of them.
func pad(other, total int) types.AttributeValue { return s(strings.Repeat("x", total-other-4)) }

// PK (2 + 2) and SK "a" (2 + 1): 7 bytes.
const keyBytes = 7

func key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": n(7), "SK": s("a")}
}

// threeUnitItem is key()'s item at 2,500 bytes: 3 write units.
func threeUnitItem() map[string]types.AttributeValue {
	it := key()
	it["Data"] = pad(keyBytes, 2500)
	return it
}

func TestFailedConditionIsBilledTheExistingItem(t *testing.T) {
	t.Parallel()
	px, c, table := unitsProxy(t)
	ctx := dynamotest.Context(t)
	big := threeUnitItem()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: big}); err != nil {
		t.Fatal(err)
	}
	_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(),
		UpdateExpression: aws.String("SET Flag = :t"), ConditionExpression: aws.String("attribute_not_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s("t")}})
	wantRefused(t, err, "ConditionalCheckFailedException", "")
	small := key() // a 1-unit item, refused: billed the 3-unit item there
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: small,
		ConditionExpression: aws.String("attribute_not_exists(PK)")})
	wantRefused(t, err, "ConditionalCheckFailedException", "")
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key(),
		ConditionExpression: aws.String("attribute_not_exists(PK)")})
	wantRefused(t, err, "ConditionalCheckFailedException", "")
	// A condition refused where there is no item: the minimum, 1.
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:              map[string]types.AttributeValue{"PK": n(7), "SK": s("none")},
		UpdateExpression: aws.String("SET Flag = :t"), ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s("t")}})
	wantRefused(t, err, "ConditionalCheckFailedException", "")
	wantTableUnits(t, px, table, 3+3+3+3+1, "the put, three refusals of the 3-unit item, one of no item")
}

func TestOverwriteIsBilledTheLargerItem(t *testing.T) {
	t.Parallel()
	px, c, table := unitsProxy(t)
	ctx := dynamotest.Context(t)
	big := threeUnitItem()
	for _, it := range []map[string]types.AttributeValue{big, key()} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	// Now 7 bytes; the update makes it 3 units again, then a batch put
	// shrinks it once more and a delete removes a 1-unit item.
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(),
		UpdateExpression:          aws.String("SET #d = :d"),
		ExpressionAttributeNames:  map[string]string{"#d": "Data"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": pad(keyBytes, 2500)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: key()}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key()}); err != nil {
		t.Fatal(err)
	}
	wantTableUnits(t, px, table, 3+3+3+3+1, "put 3, overwrite 3→1 billed 3, update 1→3, batch put 3→1, delete 1")
}

func TestIndexWritesFollowAWSRules(t *testing.T) {
	t.Parallel()
	px, c, table := unitsProxy(t)
	ctx := dynamotest.Context(t)
	item := func(g string) map[string]types.AttributeValue {
		it := key()
		it["G"], it["GS"] = s(g), s("1")
		return it
	}
	put := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(),
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueUpdatedOld})
		if err != nil {
			t.Fatal(err)
		}
	}
	put(item("a"))                                                         // into the index under a: 1
	put(item("a"))                                                         // the same entry: 0
	update("SET Note = :o", map[string]types.AttributeValue{":o": s("o")}) // not projected (KEYS_ONLY): 0
	update("SET G = :g", map[string]types.AttributeValue{":g": s("b")})    // a → b: delete under a, put under b
	update("REMOVE GS", nil)                                               // out of the index: delete under b
	put(item("c"))                                                         // back in under c: 1
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key()}); err != nil {
		t.Fatal(err) // deleted: delete under c
	}
	got := billed(px, table)
	want := map[string]float64{"": 7, "a": 2, "b": 2, "c": 2}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("units on %q = %v; want %v (all: %v)", k, got[k], w, got)
		}
	}
}

func TestNumbersAreSizedBySignificantDigits(t *testing.T) {
	t.Parallel()
	px, c, table := unitsProxy(t)
	it := key()
	// 37 digits, one significant: "Big" (3) + 1 byte for the digit + 1.
	it["Big"] = &types.AttributeValueMemberN{Value: "1" + strings.Repeat("0", 36)}
	// 0.000120: two significant digits, 1 + 1.
	it["Small"] = &types.AttributeValueMemberN{Value: "0.000120"}
	other := keyBytes + 3 + 2 + 5 + 2
	it["Data"] = pad(other, 1024) // exactly 1 KB: 1 unit
	if _, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatal(err)
	}
	wantTableUnits(t, px, table, 1, "a 1,024-byte item")
}
