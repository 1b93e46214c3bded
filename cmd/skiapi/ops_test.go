package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/sqstest"
)

// TestMain stops the SQS stand-in a test started.
func TestMain(m *testing.M) {
	code := m.Run()
	sqstest.StopStarted()
	os.Exit(code)
}

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

// TestOpsCommandsRefuseTheWrongMode: tables needs a DynamoDB store, queues
// a queue made beforehand (SQS) and dlq one with a dead-letter queue; asked
// otherwise they exit 2 saying which flag to give, before reaching any
// server.
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
		{[]string{"queues", "create"}, "--queue inproc has no queues to create; use --queue sqs"},
		{[]string{"queues", "create", "--queue", "rabbitmq"}, "--queue rabbitmq has no queues to create"},
		{[]string{"queues"}, "queues needs one of: create"},
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
	flags := []string{"--queue", "rabbitmq", "--amqp-url", amqptest.URL(t), "--amqp-prefix", prefix, "--amqp-delivery-limit", "1"}
	// Declared as the service with these flags declares them.
	adapterCfg := rabbitmq.Config{URL: amqptest.URL(t), Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity, DeliveryLimit: 1}
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

	listThenReplay(t, flags, rides, func(domain.LiftRide) string {
		return fmt.Sprintf("reason=delivery_limit queue=%s.rides.v2.0 deaths=1", prefix)
	})
	if depth, err := admin.Depth(ctx); err != nil || depth.Rides != int64(len(rides)) {
		t.Errorf("ride queue depth after replay = %+v, %v; want %d rides", depth, err, len(rides))
	}
}

// listThenReplay checks the dlq commands with flags on a dead-letter queue
// holding exactly rides: `dlq list` shows each (its line ending in what
// after says of it) and honours --limit, `dlq replay` moves them all, and
// the dead-letter queue is then empty.
func listThenReplay(t *testing.T, flags []string, rides []domain.LiftRide, after func(domain.LiftRide) string) {
	t.Helper()
	var out string
	shown := fmt.Sprintf("%d dead-lettered rides shown", len(rides))
	poll.Until(t, 20*time.Second, "dlq list showing the rides", func() string {
		code, o, errOut := skiapi(append([]string{"dlq", "list"}, flags...)...)
		if out = o; code != 0 || !strings.Contains(out, shown) {
			return fmt.Sprintf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		return ""
	})
	for _, r := range rides {
		want := fmt.Sprintf("resort=%d season=%s day=%s skier=%d time=%d lift=%d  %s",
			r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID(), r.Time(), r.LiftID(), after(r))
		if !strings.Contains(out, want) {
			t.Errorf("dlq list does not show %q:\n%s", want, out)
		}
	}
	if code, out, _ := skiapi(append([]string{"dlq", "list", "--limit", "2"}, flags...)...); code != 0 || !strings.Contains(out, "2 dead-lettered rides shown (limit 2)") {
		t.Errorf("dlq list --limit 2: exit %d:\n%s", code, out)
	}
	code, out, errOut := skiapi(append([]string{"dlq", "replay"}, flags...)...)
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%d dead-lettered rides moved", len(rides))) {
		t.Fatalf("dlq replay: exit %d, stdout %q, stderr %q; want %d moved", code, out, errOut, len(rides))
	}
	if code, out, _ := skiapi(append([]string{"dlq", "list"}, flags...)...); code != 0 || !strings.Contains(out, "0 dead-lettered rides shown") {
		t.Errorf("dlq list after replay: exit %d:\n%s", code, out)
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

// TestQueuesCreateThenDLQListAndReplayOnSQS: `skiapi queues create` makes
// the SQS ride queue and its dead-letter queue, says so, is harmless to
// run again and sets an attribute the flags change; rides the store
// refused (rejected by a consumer, as the persister does) are listed by
// `dlq list` with their reason, and `dlq replay` puts them back on the ride
// queue, whole, leaving the dead-letter queue empty. The commands run as
// the runbook runs them, under --profile ec2, whose queue is SQS: no
// --queue.
func TestQueuesCreateThenDLQListAndReplayOnSQS(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	endpoint := sqstest.EndpointOrStart(t)
	queue := sqstest.QueueName(t)
	sqstest.DeleteQueuesAtEnd(t, endpoint, queue, queue+"-dlq")
	flags := []string{"--profile", "ec2", "--sqs-endpoint", endpoint, "--sqs-queue", queue, "--dynamo-region", sqstest.Region}

	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{nil, []string{"created " + queue + "-dlq (", "created " + queue + " ("}},
		{nil, []string{queue + "-dlq exists (", queue + " exists (", "as configured"}},
		{[]string{"--sqs-visibility-timeout", "45s"}, []string{queue + "-dlq exists (", ") as configured", queue + " exists (", "); set VisibilityTimeout"}},
	} {
		code, out, errOut := skiapi(append(append([]string{"queues", "create"}, flags...), c.args...)...)
		if code != 0 {
			t.Fatalf("queues create %v: exit %d, stderr %q", c.args, code, errOut)
		}
		for _, want := range c.wants {
			if !strings.Contains(out, want) {
				t.Errorf("queues create %v printed %q; want it to say %q", c.args, out, want)
			}
		}
	}

	// A consumer, configured as the service is, refuses every ride of one
	// message.
	cfg, err := compose.ParseConfig(newFlagSet(io.Discard), flags)
	if err != nil {
		t.Fatal(err)
	}
	ctx := sqstest.Context(t)
	consumer, err := sqs.Open(ctx, cfg.SQSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = consumer.Disconnect() }()
	rides := []domain.LiftRide{
		domain.MustLiftRide(1, "2025", 3, 601, 10, 4),
		domain.MustLiftRide(1, "2025", 3, 602, 11, 5),
		domain.MustLiftRide(2, "2024", 9, 603, 12, 6),
	}
	if err := consumer.Publish(ctx, rides); err != nil {
		t.Fatal(err)
	}
	deliveries, err := consumer.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	take := func(what string) ports.Delivery {
		t.Helper()
		select {
		case d := <-deliveries:
			return d
		case <-ctx.Done():
			t.Fatalf("%s was not delivered", what)
			return ports.Delivery{}
		}
	}
	if err := consumer.Reject(ctx, take("the published message"), rides); err != nil {
		t.Fatal(err)
	}

	listThenReplay(t, flags, rides, func(domain.LiftRide) string {
		return fmt.Sprintf("reason=rejected queue=%s deaths=", queue)
	})
	if got := take("the replayed rides").Rides; !slices.Equal(got, rides) {
		t.Errorf("the ride queue delivered %v after the replay; want the dead-lettered rides %v", got, rides)
	}
}
