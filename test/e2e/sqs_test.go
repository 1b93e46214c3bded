package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/sqstest"
)

// The service with Amazon SQS as its queue, against the stand-in (fauxqs
// behind the strict proxy, test/sqstest), which the first of these tests
// starts for the whole binary. Each test makes a ride queue and its
// dead-letter queue of its own, as `skiapi queues create` does. The SDK's
// credential chain is given dummy keys through the environment, and the
// region through --dynamo-region, as an operator would give them.

// sqsEnv is what a skiapi process needs in its environment to sign
// requests to the stand-in.
var sqsEnv = []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"}

// sqsConfig is cfg with rides going through SQS at endpoint (the shared
// stand-in when empty), on queues of the test's own made through the
// registry's CreateQueues, the code of `skiapi queues create`. The test
// process gets the dummy credentials, so the test cannot be parallel.
func sqsConfig(t *testing.T, cfg compose.Config, endpoint string) compose.Config {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	cfg.Listen = "127.0.0.1:0"
	cfg.Queue = "sqs"
	cfg.SQS.Queue = sqstest.QueueName(t)
	cfg.SQS.Endpoint = sqstest.EndpointOrStart(t)
	cfg.Dynamo.Region = sqstest.Region
	sqstest.DeleteQueuesAtEnd(t, cfg.SQS.Endpoint, cfg.SQS.Queue, cfg.SQS.Queue+"-dlq")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := compose.QueueOf(cfg).CreateQueues(ctx, cfg); err != nil {
		t.Fatalf("create the queues: %v", err)
	}
	if endpoint != "" {
		cfg.SQS.Endpoint = endpoint
	}
	return cfg
}

// sqsQueueFlags makes a ride queue of the test's own with `skiapi queues
// create` and returns the flags that point a process at it through the
// shared stand-in (the last --sqs-endpoint given wins, so a test may
// append another).
func sqsQueueFlags(t *testing.T, bin string) []string {
	t.Helper()
	queue := sqstest.QueueName(t)
	endpoint := sqstest.EndpointOrStart(t)
	sqstest.DeleteQueuesAtEnd(t, endpoint, queue, queue+"-dlq")
	flags := []string{"--queue", "sqs", "--sqs-queue", queue, "--sqs-endpoint", endpoint, "--dynamo-region", sqstest.Region}
	cmd := exec.Command(bin, append([]string{"queues", "create"}, flags...)...)
	cmd.Env = append(cmd.Environ(), sqsEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "created "+queue+"-dlq") || !strings.Contains(string(out), "created "+queue+" ") {
		t.Fatalf("skiapi queues create: %v\n%s", err, out)
	}
	return flags
}

// sqsRolesSetup is the flags both roles share: a fresh PostgreSQL schema
// and SQS queues of the test's own; and the schema's name and a connection
// to inspect it.
func sqsRolesSetup(t *testing.T, bin string) ([]string, string, *pgx.Conn) {
	t.Helper()
	cfg, admin := postgresConfig(t)
	return append(sqsQueueFlags(t, bin),
		"--store", "postgres", "--database-url", cfg.Postgres.URL, "--db-schema", cfg.Postgres.Schema,
		"--shutdown-timeout", "30s",
	), cfg.Postgres.Schema, admin
}

func startSQSRole(t *testing.T, name, bin string, flags ...string) *proc {
	t.Helper()
	return startSkiapiWith(t, name, bin, sqsEnv, flags...)
}

// sqsMessages is how many messages the ride queue holds, visible and in
// flight, read from the stand-in itself.
func sqsMessages(t *testing.T, queue string) (int, error) {
	t.Helper()
	c := sqssim.Client(sqstest.EndpointOrStart(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		return 0, err
	}
	out, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range out.Attributes {
		m, err := strconv.Atoi(v)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// flagValue is the value of --name in flags.
func flagValue(flags []string, name string) string {
	for i, f := range flags[:len(flags)-1] {
		if f == "--"+name {
			return flags[i+1]
		}
	}
	return ""
}

// TestSQSMemoryEndToEnd runs the API suite with rides going through SQS,
// stored in memory.
func TestSQSMemoryEndToEnd(t *testing.T) {
	apitest.Run(t, apitest.Start(t, sqsConfig(t, compose.DefaultConfig(), "")))
}

// TestSQSPostgresEndToEnd runs the API suite with rides going through SQS
// to PostgreSQL.
func TestSQSPostgresEndToEnd(t *testing.T) {
	cfg, _ := postgresConfig(t)
	apitest.Run(t, apitest.Start(t, sqsConfig(t, cfg, "")))
}

// TestSQSRolesEndToEnd runs the API suite against an API process whose
// rides a consumer process takes from SQS and stores in PostgreSQL; both
// exit 0 on SIGTERM.
func TestSQSRolesEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	flags, _, _ := sqsRolesSetup(t, bin)
	api := startSQSRole(t, "api", bin, append([]string{"--role", "api"}, flags...)...)
	consumer := startSQSRole(t, "consumer", bin, append([]string{"--role", "consumer"}, flags...)...)
	apitest.Run(t, api.base)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := apitest.Call(t, "GET", consumer.base+path, ""); r.Status != http.StatusOK {
			t.Errorf("GET %s on the consumer: %d %s; want 200", path, r.Status, r.Body)
		}
	}
	// Each process counts its own requests to SQS: the API sends, the
	// consumer receives and deletes.
	apiMetrics := string(apitest.Call(t, "GET", api.base+"/metrics", "").Body)
	consumerMetrics := string(apitest.Call(t, "GET", consumer.base+"/metrics", "").Body)
	if n := metricSum(apiMetrics, "skidata_queue_requests_total", `api="SendMessage"`); n == 0 {
		t.Errorf("the API process counts no SendMessage")
	}
	for _, api := range []string{"ReceiveMessage", "DeleteMessageBatch"} {
		if n := metricSum(consumerMetrics, "skidata_queue_requests_total", `api="`+api+`"`); n == 0 {
			t.Errorf("the consumer process counts no %s", api)
		}
	}
	if billed, asked := metricSum(consumerMetrics, "skidata_queue_billed_requests_total"), metricSum(consumerMetrics, "skidata_queue_requests_total"); billed < asked {
		t.Errorf("the consumer's billed requests %v are fewer than its requests %v", billed, asked)
	}
	api.terminate(t)
	consumer.terminate(t)
}

// TestSQSConsumerKilledMidBatchIsRedeliveredAndStoredOnce: SQS refuses
// every delete the first consumer process asks for, so it stores batches
// it cannot settle, and it is killed with SIGKILL holding them. Their
// messages come back once their visibility timeout ends, a second consumer
// stores them again and deletes them: every ride answered 201 is in the
// store once, and the queue ends empty (the first consumer deleted none),
// with nothing dead-lettered.
func TestSQSConsumerKilledMidBatchIsRedeliveredAndStoredOnce(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	flags, schema, admin := sqsRolesSetup(t, bin)
	api := startSQSRole(t, "api", bin, append([]string{"--role", "api"}, flags...)...)
	px := sqstest.NewProxyOf(t, sqstest.UpstreamOrStart(t), sqssim.Options{})
	px.Refuse("DeleteMessageBatch", 10_000, sqssim.InternalError)
	consumerFlags := append([]string{"--role", "consumer", "--batch-size", "20", "--sqs-visibility-timeout", "3s"}, flags...)
	first := startSQSRole(t, "consumer 1", bin, append(consumerFlags, "--sqs-endpoint", px.URL)...)

	const total = 600
	client := &http.Client{Timeout: 20 * time.Second}
	var (
		mu       sync.Mutex
		accepted []rolesRide
		wg       sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < total; i += 8 {
				r := crashRide(i)
				if code, err := postCrashRide(client, api.base, r); err != nil || code != http.StatusCreated {
					t.Errorf("POST %+v: %d, %v; want 201", r, code, err)
					continue
				}
				mu.Lock()
				accepted = append(accepted, r)
				mu.Unlock()
			}
		})
	}
	apitest.Eventually(t, "the first consumer storing rides it cannot delete", func() string {
		stored, err := storedCrashRides(context.Background(), admin, schema)
		if err != nil {
			return err.Error()
		}
		if deletes := px.Answered()["DeleteMessageBatch"]; len(stored) == 0 || deletes == 0 {
			return fmt.Sprintf("%d rides stored, %d deletes refused", len(stored), deletes)
		}
		return ""
	})
	first.kill9(t)
	wg.Wait()
	second := startSQSRole(t, "consumer 2", bin, consumerFlags...)
	waitEveryAcceptedStoredOnce(t, admin, schema, accepted, total)
	queue := flagValue(flags, "sqs-queue")
	apitest.Eventually(t, "the ride queue empty: the first consumer's messages redelivered and deleted", func() string {
		n, err := sqsMessages(t, queue)
		if err != nil || n != 0 {
			return fmt.Sprintf("%d messages, %v", n, err)
		}
		return ""
	})
	// Emptied by the second consumer, not by the redrive policy: a message
	// received too often would leave the ride queue for the dead-letter
	// queue with its rides already stored, and the checks above would pass.
	if n, err := sqsMessages(t, queue+"-dlq"); err != nil || n != 0 {
		t.Errorf("the dead-letter queue holds %d messages (%v); want none: every message the first consumer held delivered again and deleted", n, err)
	}
	api.terminate(t)
	second.terminate(t)
}

// TestKill9SQSRolesLoseNoAcceptedRide: API and consumer processes over SQS
// and PostgreSQL, both killed with SIGKILL under load (the API with
// messages in flight to SQS, the consumer holding received ones), then
// restarted: every ride answered 201 reaches the store, once.
func TestKill9SQSRolesLoseNoAcceptedRide(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	flags, schema, admin := sqsRolesSetup(t, bin)
	// A short visibility timeout, so the restarted consumer gets what the
	// killed one held without waiting out the default.
	consumerFlags := append([]string{"--role", "consumer", "--sqs-visibility-timeout", "3s"}, flags...)
	start := func(name string, args ...string) *proc { return startSQSRole(t, name, bin, args...) }
	killBothRolesMidLoad(t, start, append([]string{"--role", "api"}, flags...), consumerFlags, admin, schema)
}

// TestSQSUnreachableIs503WithRetryAfterAndRecovers: the network to SQS is
// cut (toxiproxy, in this process, stops taking connections) while the
// service runs: a POST is answered 503 with Retry-After, never 201, and
// /readyz says SQS is unavailable; once SQS is reachable again POSTs are
// accepted, and every ride answered 201, before and after, is stored.
func TestSQSUnreachableIs503WithRetryAfterAndRecovers(t *testing.T) {
	tp := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), t.Name(), "127.0.0.1:0",
		strings.TrimPrefix(sqstest.EndpointOrStart(t), "http://"))
	if err := tp.Start(); err != nil {
		t.Fatalf("start toxiproxy: %v", err)
	}
	t.Cleanup(tp.Stop)
	cfg := sqsConfig(t, compose.DefaultConfig(), "http://"+tp.Listen)
	cfg.SQS.PublishTimeout = 2 * time.Second
	cfg.SQS.DepthInterval = time.Second // /readyz reads a fresh sample soon after the cut and after the return
	// A long poll cut while it waits may still take the next message on
	// SQS's side, which then stays hidden for its visibility timeout
	// before it is delivered again: a short one keeps the wait short.
	cfg.SQS.VisibilityTimeout = 3 * time.Second
	base := apitest.Start(t, cfg)

	var accepted []int // skiers of the rides answered 201, one ride each
	post := func(skier int) apitest.Response {
		r := sendRide(t, base, 1, 12, skier)
		if r.Status == http.StatusCreated {
			accepted = append(accepted, skier)
		}
		return r
	}
	for skier := 1; skier <= 5; skier++ {
		if r := post(skier); r.Status != http.StatusCreated {
			t.Fatalf("POST before the cut: %d %s; want 201", r.Status, r.Body)
		}
	}

	tp.Stop()
	for skier := 101; skier <= 110; skier++ {
		r := post(skier)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("POST with SQS unreachable: %d %s, Retry-After %q; want 503 with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	apitest.Eventually(t, "/readyz saying SQS is unavailable", func() string {
		if r := readyz(t, base); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), `"sqs":"unavailable"`) {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		return ""
	})

	if err := tp.Start(); err != nil {
		t.Fatalf("restart toxiproxy on %s: %v", tp.Listen, err)
	}
	next := 201
	apitest.Eventually(t, "a POST accepted once SQS is back", func() string {
		r := post(next)
		next++
		if r.Status != http.StatusCreated {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		return ""
	})
	for skier := 301; skier <= 305; skier++ {
		if r := post(skier); r.Status != http.StatusCreated {
			t.Errorf("POST after the outage: %d %s; want 201", r.Status, r.Body)
		}
	}
	for _, skier := range accepted {
		apitest.Eventually(t, fmt.Sprintf("skier %d's ride stored", skier), func() string {
			if r := dayVertical(t, base, 1, 12, skier); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "30" {
				return fmt.Sprintf("%d %s (want 200 30)", r.Status, r.Body)
			}
			return ""
		})
	}
	apitest.Eventually(t, "/readyz ok again", func() string {
		if r := readyz(t, base); r.Status != http.StatusOK {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		return ""
	})
}
