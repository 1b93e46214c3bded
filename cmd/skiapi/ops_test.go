package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/dynamotest"
)

// skiapi runs one command in this process and returns its exit code and
// output.
func skiapi(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestTablesCreateTwiceThenDescribe: creating the tables is idempotent, and
// describe shows both tables, active, with the resort index. Credentials come
// from the SDK's default chain, here the environment.
func TestTablesCreateTwiceThenDescribe(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, store := range []string{"dynamo-adopted", "dynamo-abandoned"} {
		t.Run(store, func(t *testing.T) {
			prefix := dynamotest.Prefix(t)
			flags := []string{"--store", store, "--dynamo-region", dynamotest.Region, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", prefix}
			for i := range 2 {
				code, out, errOut := skiapi(append([]string{"tables", "create"}, flags...)...)
				if code != 0 || !strings.Contains(out, "active") {
					t.Fatalf("tables create (run %d): exit %d, stdout %q, stderr %q; want 0 and the tables active", i+1, code, out, errOut)
				}
			}
			code, out, errOut := skiapi(append([]string{"tables", "describe"}, flags...)...)
			if code != 0 {
				t.Fatalf("tables describe: exit %d, stderr %q", code, errOut)
			}
			for _, want := range []string{
				"table " + prefix + "skierTable: ACTIVE, billing PAY_PER_REQUEST, keys SkierID HASH, SortKey RANGE",
				"table " + prefix + "resortTable: ACTIVE, billing PAY_PER_REQUEST, keys ResortID HASH",
				"index resort-index: ACTIVE, keys ResortID HASH, SeasonDaySkier RANGE, projection KEYS_ONLY",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("tables describe does not print %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestOpsCommandsRefuseTheWrongMode: tables needs a DynamoDB store and dlq
// RabbitMQ; asked otherwise they exit 2 saying which flag to give, before
// reaching any server.
func TestOpsCommandsRefuseTheWrongMode(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tables", "create"}, "--store memory has no DynamoDB tables; use one of --store dynamo-adopted|dynamo-abandoned|dynamo-counters"},
		{[]string{"tables", "describe", "--store", "postgres", "--database-url", "postgres://x@127.0.0.1:1/x"}, "--store postgres has no DynamoDB tables"},
		{[]string{"dlq", "list"}, "--queue inproc has no dead-letter queue; use --queue rabbitmq"},
		{[]string{"dlq", "replay"}, "--queue inproc has no dead-letter queue"},
		{[]string{"dlq", "list", "--queue", "rabbitmq", "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"dlq"}, "dlq needs one of: list, replay"},
		{[]string{"tables", "drop"}, "tables needs one of: create, describe"},
	} {
		code, _, errOut := skiapi(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("skiapi %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

// TestDLQListThenReplay dead-letters three rides the way the service does
// (a delivery limit of 1 and a nack), lists them with their reason, replays
// them onto the ride queue and checks the dead-letter queue is then empty
// and the ride queue holds the three.
func TestDLQListThenReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("skitest.cmd.%d", time.Now().UnixNano())
	flags := []string{"--queue", "rabbitmq", "--amqp-url", amqptest.URL(), "--amqp-prefix", prefix, "--amqp-delivery-limit", "1"}
	// Declared as the service with these flags declares them.
	adapterCfg := rabbitmq.Config{URL: amqptest.URL(), Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity, DeliveryLimit: 1}
	admin := amqptest.Open(t, adapterCfg)

	// A consumer that refuses every ride once: each is dead-lettered.
	consumer, err := rabbitmq.Open(ctx, adapterCfg)
	if err != nil {
		t.Fatal(err)
	}
	rides := []domain.LiftRide{
		domain.MustLiftRide(1, "2025", 3, 501, 10, 4),
		domain.MustLiftRide(1, "2025", 3, 502, 11, 5),
		domain.MustLiftRide(2, "2024", 9, 503, 12, 6),
	}
	for _, r := range rides {
		if err := consumer.Publish(ctx, []domain.LiftRide{r}); err != nil {
			t.Fatal(err)
		}
	}
	deliveries, err := consumer.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range rides {
		select {
		case d := <-deliveries:
			if err := consumer.Nack(ctx, []ports.Delivery{d}); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("the published rides were not delivered")
		}
	}
	_ = consumer.Close()
	_ = consumer.Disconnect()

	var out string
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, o, errOut := skiapi(append([]string{"dlq", "list"}, flags...)...)
		if code != 0 {
			t.Fatalf("dlq list: exit %d, stderr %q", code, errOut)
		}
		if out = o; strings.Contains(out, "3 dead-lettered rides shown") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq list never showed the 3 rides:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range rides {
		want := fmt.Sprintf("resort=%d season=%s day=%s skier=%d time=%d lift=%d  reason=delivery_limit queue=%s.rides.v2.0 deaths=1",
			r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID(), r.Time(), r.LiftID(), prefix)
		if !strings.Contains(out, want) {
			t.Errorf("dlq list does not show %q:\n%s", want, out)
		}
	}
	if code, out, _ := skiapi(append([]string{"dlq", "list", "--limit", "2"}, flags...)...); code != 0 || !strings.Contains(out, "2 dead-lettered rides shown (limit 2)") {
		t.Errorf("dlq list --limit 2: exit %d:\n%s", code, out)
	}

	code, out, errOut := skiapi(append([]string{"dlq", "replay"}, flags...)...)
	if code != 0 || !strings.HasPrefix(out, "3 dead-lettered rides moved") {
		t.Fatalf("dlq replay: exit %d, stdout %q, stderr %q; want 3 moved", code, out, errOut)
	}
	if code, out, _ := skiapi(append([]string{"dlq", "list"}, flags...)...); code != 0 || !strings.Contains(out, "0 dead-lettered rides shown") {
		t.Errorf("dlq list after replay: exit %d:\n%s", code, out)
	}
	if depth, err := admin.Depth(ctx); err != nil || depth.Rides != int64(len(rides)) {
		t.Errorf("ride queue depth after replay = %+v, %v; want %d rides", depth, err, len(rides))
	}
}

// TestSeedLoadsTheDemoResortsIntoADynamoDBStore: the ec2 profile no longer
// seeds at start, so `skiapi seed` must reach the DynamoDB models too; a
// memory store, gone when the command ends, is refused.
func TestSeedLoadsTheDemoResortsIntoADynamoDBStore(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	flags := []string{"--store", "dynamo-sharded", "--dynamo-region", dynamotest.Region, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", dynamotest.Prefix(t)}
	if code, _, errOut := skiapi(append([]string{"tables", "create"}, flags...)...); code != 0 {
		t.Fatalf("tables create: exit %d: %s", code, errOut)
	}
	for i, want := range []string{
		"demo resorts loaded: 10 resorts and 20 seasons added; the store holds 10 resorts",
		"demo resorts already loaded, nothing changed; the store holds 10 resorts", // a second seed loads nothing new
	} {
		code, out, errOut := skiapi(append([]string{"seed"}, flags...)...)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("seed (run %d): exit %d, stdout %q, stderr %q; want 0 and %q", i+1, code, out, errOut, want)
		}
	}
	if code, _, errOut := skiapi("seed", "--store", "memory"); code != 2 || !strings.Contains(errOut, "--store memory keeps nothing") {
		t.Errorf("seed --store memory: exit %d, %q; want 2 saying memory keeps nothing", code, errOut)
	}
}
