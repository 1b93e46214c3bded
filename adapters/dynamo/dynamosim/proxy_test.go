package dynamosim_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/needs"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// AWS bills a read request at least one 4 KB read even when it finds
// nothing; dynalite reports 0 for an empty Query, the proxy the minimum.
func TestReadsFindingNothingAreBilledAWSMinimum(t *testing.T) {
	t.Parallel()
	px := dynamotest.NewProxy(t, dynamosim.Options{})
	c := dynamosim.ClientFor(px.URL)
	table := newTable(t, c)
	ctx := dynamotest.Context(t)
	for _, consistent := range []bool{false, true} {
		out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("PK = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": n(404)}, ConsistentRead: aws.Bool(consistent),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		want := 0.5
		if consistent {
			want = 1
		}
		if out.Count != 0 || out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != want {
			t.Errorf("empty Query (consistent %v): %d items, consumed %+v; want 0 items, %v units", consistent, out.Count, out.ConsumedCapacity, want)
		}
	}
	out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("g-index"), KeyConditionExpression: aws.String("G = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("none")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil || out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != 0.5 {
		t.Errorf("empty index Query: %+v, %v; want 0.5 units", out.ConsumedCapacity, err)
	}
}

// A table keyed (PK N, SK S) with an index keyed (G S, GS S), like the
// skier table and its resort index.
func newTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := dynamotest.Prefix(t) + "strict"
	_, err := c.CreateTable(dynamotest.Context(t), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("G"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("GS"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("g-index"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("G"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("GS"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(dynamotest.Context(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	return name
}

// noRetry makes the SDK hand every error back at once.
func noRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func b(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }

// wantRefused fails unless err is AWS's error code with a message
// containing want.
// updateItemA updates the item PK 1, SK "a" of table, the item the
// update-expression cases work on.
func updateItemA(t *testing.T, c *dynamodb.Client, table string, in dynamodb.UpdateItemInput) error {
	in.TableName = aws.String(table)
	in.Key = map[string]types.AttributeValue{"PK": n(1), "SK": s("a")}
	_, err := c.UpdateItem(dynamotest.Context(t), &in)
	return err
}

func wantRefused(t *testing.T, err error, code, want string) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) {
		t.Fatalf("err = %v; want %s: %s", err, code, want)
	}
	if api.ErrorCode() != code || !strings.Contains(api.ErrorMessage(), want) {
		t.Fatalf("err = %s: %s; want %s containing %q", api.ErrorCode(), api.ErrorMessage(), code, want)
	}
}

// dynaliteAccepts checks the request really is one dynalite takes, so the
// rule's test shows the layer doing the refusing.
func dynaliteAccepts(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("dynalite alone refused the request (%v): the rule would not need the layer", err)
	}
}

func TestEmptyStringInKeyConditionIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	q := func(c *dynamodb.Client) error {
		_, err := c.Query(dynamotest.Context(t), &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			KeyConditionExpression:    aws.String("#k = :k AND begins_with(#s, :p)"),
			ExpressionAttributeNames:  map[string]string{"#k": "PK", "#s": "SK"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":k": n(1), ":p": s("")},
		})
		return err
	}
	dynaliteAccepts(t, q(dynamosim.ClientFor(dynamotest.Upstream(t))))
	wantRefused(t, q(c), "ValidationException",
		"One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: SK")
}

func TestEmptyStringInIndexKeyOfItemIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	put := func(c *dynamodb.Client, sk string) error {
		_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": n(1), "SK": s(sk), "G": s(""), "GS": s("x")}})
		return err
	}
	dynaliteAccepts(t, put(dynamosim.ClientFor(dynamotest.Upstream(t)), "a"))
	wantRefused(t, put(c, "b"), "ValidationException", "cannot contain an empty string value. Key: G")
}

func TestEmptyStringIndexKeySetByUpdateIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	upd := func(c *dynamodb.Client) error {
		return updateItemA(t, c, table, dynamodb.UpdateItemInput{
			UpdateExpression:          aws.String("SET #g = :g"),
			ExpressionAttributeNames:  map[string]string{"#g": "GS"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("")}})
	}
	dynaliteAccepts(t, upd(dynamosim.ClientFor(dynamotest.Upstream(t))))
	wantRefused(t, upd(c), "ValidationException", "cannot contain an empty string value. Key: GS")
}

func TestEmptyBinaryInKeyIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("a"), "G": b([]byte{}), "GS": s("x")}})
	// The index key G is a string, so dynalite and AWS refuse a binary as
	// a type mismatch; an empty string in a key is the rule's other half.
	if err == nil {
		t.Fatal("an item with an empty binary index key was accepted")
	}
	_, err = c.GetItem(dynamotest.Context(t), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{"PK": n(1), "SK": s("")}})
	wantRefused(t, err, "ValidationException", "cannot contain an empty string value. Key: SK")
}

func TestItemOver400KBIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	big := strings.Repeat("x", dynamosim.MaxItemBytes)
	_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("a"), "Data": s(big)}})
	wantRefused(t, err, "ValidationException", "Item size has exceeded the maximum allowed size")
	_, err = c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("b"), "Data": s(big)}}}}}})
	wantRefused(t, err, "ValidationException", "Item size has exceeded the maximum allowed size")
	// Just under the limit is fine.
	_, err = c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"PK": n(1), "SK": s("c"), "Data": s(big[:dynamosim.MaxItemBytes-100])}})
	if err != nil {
		t.Fatalf("an item under 400 KB was refused: %v", err)
	}
}

func puts(from, count int, sk func(int) string) []types.WriteRequest {
	var out []types.WriteRequest
	for i := from; i < from+count; i++ {
		out = append(out, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"PK": n(i), "SK": s(sk(i))}}})
	}
	return out
}

func TestBatchWriteOf26IsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	_, err := c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: puts(0, 26, func(int) string { return "a" })}})
	wantRefused(t, err, "ValidationException", "Member must have length less than or equal to 25")
	if _, err := c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: puts(0, 25, func(int) string { return "a" })}}); err != nil {
		t.Fatalf("a batch of 25 was refused: %v", err)
	}
}

func TestBatchWriteNamingOneKeyTwiceIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	reqs := append(puts(1, 2, func(int) string { return "a" }), puts(1, 1, func(int) string { return "a" })...)
	_, err := c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
	wantRefused(t, err, "ValidationException", "Provided list of item keys contains duplicates")
}

func TestUnusedExpressionAttributeNameIsRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	_, err := c.Query(dynamotest.Context(t), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": "PK", "#x": "Other"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": n(1)},
	})
	wantRefused(t, err, "ValidationException", "Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}")
}

// An update expression must use every name and value it is given and be
// given every one it uses.
func TestUpdateExpressionAttributeMistakesAreRefused(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	table := newTable(t, c)
	for _, tc := range []struct {
		name string
		in   dynamodb.UpdateItemInput
		want string
	}{
		{"UnusedValue", dynamodb.UpdateItemInput{
			UpdateExpression:          aws.String("ADD #t :v"),
			ExpressionAttributeNames:  map[string]string{"#t": "Total"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1), ":unused": n(2)},
		}, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}"},
		{"MissingName", dynamodb.UpdateItemInput{
			UpdateExpression:          aws.String("ADD #t :v"),
			ConditionExpression:       aws.String("NOT contains(#keys, :k)"),
			ExpressionAttributeNames:  map[string]string{"#t": "Total"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1), ":k": s("x")},
		}, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #keys"},
		{"MissingValue", dynamodb.UpdateItemInput{
			UpdateExpression:          aws.String("ADD #t :v, #keys :set"),
			ExpressionAttributeNames:  map[string]string{"#t": "Total", "#keys": "Keys"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)},
		}, "Invalid UpdateExpression: An expression attribute value used in expression is not defined; attribute value: :set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, updateItemA(t, c, table, tc.in), "ValidationException", tc.want)
		})
	}
}

// starvedTable is a new table behind a throughput model that allows each
// partition almost nothing, and a client of it that does not retry.
func starvedTable(t *testing.T) (*dynamosim.Proxy, *dynamodb.Client, string) {
	px := dynamotest.NewProxy(t, dynamosim.Options{Throughput: true, WriteUnits: 0.001})
	c := dynamosim.ClientFor(px.URL, noRetry)
	return px, c, newTable(t, c)
}

// With a partition allowed almost nothing, the second write to one
// partition key value is throttled as AWS answers, and another key is not.
func TestThroughputModelThrottlesOnePartitionKey(t *testing.T) {
	t.Parallel()
	px, c, table := starvedTable(t)
	put := func(pk int, sk string) error {
		_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": n(pk), "SK": s(sk)}})
		return err
	}
	if err := put(1, "a"); err != nil {
		t.Fatal(err)
	}
	err := put(1, "b")
	wantRefused(t, err, "ProvisionedThroughputExceededException", "Throughput exceeds the current capacity of your table or index")
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Errorf("err = %T; want the SDK's *types.ProvisionedThroughputExceededException", err)
	}
	if err := put(2, "a"); err != nil {
		t.Errorf("a write to another partition key was refused: %v", err)
	}
	if got := px.Throttled(); got != 1 {
		t.Errorf("Throttled() = %d; want 1", got)
	}
}

// A batch hands back exactly its throttled requests in UnprocessedItems
// and writes the others.
func TestThroughputModelReturnsThrottledBatchItemsUnprocessed(t *testing.T) {
	t.Parallel()
	_, c, table := starvedTable(t)
	// Three items of PK 1 (one admitted), two of PK 2 and 3 (all admitted).
	reqs := append(puts(1, 1, func(int) string { return "a" }), puts(1, 1, func(int) string { return "b" })...)
	reqs = append(reqs, puts(1, 1, func(int) string { return "c" })...)
	reqs = append(reqs, puts(2, 2, func(int) string { return "a" })...)
	out, err := c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	left := out.UnprocessedItems[table]
	if len(left) != 2 {
		t.Fatalf("UnprocessedItems = %d; want the 2 throttled writes of PK 1", len(left))
	}
	for _, r := range left {
		if r.PutRequest.Item["PK"].(*types.AttributeValueMemberN).Value != "1" {
			t.Errorf("unprocessed item of PK %v; only PK 1 is over its capacity", r.PutRequest.Item["PK"])
		}
	}
	scan, err := dynamotest.Client(t).Scan(dynamotest.Context(t), &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
	if err != nil || scan.Count != 3 {
		t.Errorf("items written = %d, %v; want 3", scan.Count, err)
	}
	// All throttled: the whole call is refused.
	_, err = c.BatchWriteItem(dynamotest.Context(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: left}})
	wantRefused(t, err, "ProvisionedThroughputExceededException", "Throughput exceeds")
}

// Writes to different table keys under one index key value share the
// index partition, and the index's refusal says so.
func TestThroughputModelThrottlesAHotIndexKey(t *testing.T) {
	t.Parallel()
	_, c, table := starvedTable(t)
	put := func(pk int) error {
		_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": n(pk), "SK": s("a"), "G": s("resort-1"), "GS": s(strconv.Itoa(pk))}})
		return err
	}
	if err := put(1); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, put(2), "ProvisionedThroughputExceededException", "global secondary indexes")
}

// The accounting charges a write unit per KB to the table's partition key
// value and one per index entry to the index's, throttling or not.
func TestPartitionsAccountWritesPerKeyAndIndex(t *testing.T) {
	t.Parallel()
	px := dynamotest.NewProxy(t, dynamosim.Options{})
	c := dynamosim.ClientFor(px.URL)
	table := newTable(t, c)
	for i := range 4 {
		_, err := c.PutItem(dynamotest.Context(t), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": n(7), "SK": s(strconv.Itoa(i)), "G": s("r"), "GS": s(strconv.Itoa(i)),
				"Data": s(strings.Repeat("x", 1500))}}) // 2 KB: 2 units on the table, 1 on the KEYS_ONLY index
		if err != nil {
			t.Fatal(err)
		}
	}
	got := map[dynamosim.PartitionKey]float64{}
	for _, p := range px.Partitions() {
		got[p.PartitionKey] = p.WriteUnits
	}
	if w := got[dynamosim.PartitionKey{table, "", "7"}]; w != 8 {
		t.Errorf("table partition 7 = %v units; want 4 items × 2", w)
	}
	if w := got[dynamosim.PartitionKey{table, "g-index", "r"}]; w != 4 {
		t.Errorf("index partition r = %v units; want 4 entries × 1", w)
	}
}

// Start hands its args to dynalite as --name value pairs; an argument
// without its value is refused by the launcher, and Start says why rather
// than waiting for a dynalite that never listens.
func TestStartRefusesAnOptionWithoutItsValue(t *testing.T) {
	t.Parallel()
	needs.Server(t, dynamotest.Server) // the launcher runs on Node.js
	srv, err := dynamosim.Start("--maxItemSizeKb")
	if err == nil {
		srv.Stop()
		t.Fatal("Start(--maxItemSizeKb) started dynalite; want the launcher's usage error")
	}
	if !strings.Contains(err.Error(), "usage: listen.js") {
		t.Errorf("Start(--maxItemSizeKb) = %v; want the launcher's usage message", err)
	}
}
