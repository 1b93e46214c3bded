package e2e

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/sqstest"
)

// ec2Env sets the process environment as an instance's env file does
// (SKI_PROFILE; the region, here AWS_REGION; credentials, here dummy ones,
// for the SDK's default chain), and points the instance-metadata client at
// a closed port so that nothing on this machine is mistaken for EC2.
// SKI_QUEUE is left unset: the stack writes it too, but an operator's
// command under the profile has no env file, so the profile must choose
// the stack's queue by itself.
func ec2Env(t *testing.T, region string) {
	t.Helper()
	t.Setenv("SKI_PROFILE", "ec2")
	unsetenv(t, "SKI_QUEUE")
	if region == "" {
		unsetenv(t, "AWS_REGION", "AWS_DEFAULT_REGION")
	} else {
		t.Setenv("AWS_REGION", region)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", closedURL(t))
}

// unsetenv makes the variables absent for the test: t.Setenv records the
// value to restore after it, and an empty variable is not an absent one.
func unsetenv(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
}

// ec2AmazonMQEnv adds what the env file holds with the stack's Amazon MQ
// choice (Queue=rabbitmq): SKI_QUEUE=rabbitmq and the broker in AMQP_URL.
func ec2AmazonMQEnv(t *testing.T, amqpURL string) {
	t.Helper()
	t.Setenv("SKI_QUEUE", "rabbitmq")
	t.Setenv("AMQP_URL", amqpURL)
}

// ec2SQS names a ride queue of the test's own in SKI_SQS_QUEUE, as the env
// file names the stack's, and returns the flag that points SQS at
// endpoint.
func ec2SQS(t *testing.T, endpoint string) []string {
	t.Helper()
	t.Setenv("SKI_SQS_QUEUE", sqstest.QueueName(t))
	return []string{"--sqs-endpoint", endpoint}
}

// ec2Tables makes the sharded model's tables under a prefix of the test's
// own in dynalite, as the stack does, and returns the flags that point the
// store at them.
func ec2Tables(t *testing.T) []string {
	t.Helper()
	endpoint := dynamotest.EndpointOrStart(t)
	prefix := dynamotest.Prefix(t)
	if err := dynamo.CreateTables(dynamotest.Context(t), dynamosim.ClientFor(endpoint), prefix, dynamo.ModelSharded); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	return []string{"--dynamo-endpoint", endpoint, "--dynamo-table-prefix", prefix}
}

// ec2Config parses the command line an operator would use to run the ec2
// profile somewhere other than AWS: the profile from the environment, only
// the endpoints and names overridden. The queue must be queue.
func ec2Config(t *testing.T, queue string, args ...string) compose.Config {
	t.Helper()
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := compose.ParseConfig(fs, append([]string{"--listen", "127.0.0.1:0"}, args...))
	if err != nil {
		t.Fatalf("parse ec2 config: %v", err)
	}
	if cfg.Store != "dynamo-sharded" || cfg.Queue != queue || cfg.LogFormat != "json" {
		t.Fatalf("SKI_PROFILE=ec2 gave store %s, queue %s, logs %s; want dynamo-sharded, %s, json", cfg.Store, cfg.Queue, cfg.LogFormat, queue)
	}
	return cfg
}

func closedURL(t *testing.T) string { return "http://" + apitest.ClosedAddr(t) }

func buildFails(t *testing.T, cfg compose.Config, wants ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, cleanup, err := compose.Build(ctx, cfg)
	if err == nil {
		cleanup()
		_ = svc
		t.Fatalf("the service started; want it to fail naming %q", wants)
	}
	t.Logf("start failed as it should: %v", err)
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("start error %q does not say %q", err, w)
		}
	}
}

// TestEC2ProfileEndToEnd runs the HTTP suite on the production layout as
// the stack runs it (the ec2 profile: DynamoDB sharded model, Amazon SQS,
// JSON logs), the queue's name in SKI_SQS_QUEUE, with only the DynamoDB
// endpoint pointed at dynalite and SQS's at the stand-in.
func TestEC2ProfileEndToEnd(t *testing.T) {
	ec2Env(t, sqstest.Region)
	cfg := ec2Config(t, "sqs", append(ec2Tables(t), ec2SQS(t, sqstest.EndpointOrStart(t))...)...)
	// The stack makes the queues as `skiapi queues create` does.
	sqstest.DeleteQueuesAtEnd(t, cfg.SQS.Endpoint, cfg.SQS.Queue, cfg.SQS.Queue+"-dlq")
	if _, err := compose.QueueOf(cfg).CreateQueues(sqstest.Context(t), cfg); err != nil {
		t.Fatalf("create the queues: %v", err)
	}
	// The profile does not seed at start; the suite asks about the demo
	// resorts, so they are loaded as an operator would (`skiapi seed`).
	st, closeStore, err := compose.OpenStore(dynamotest.Context(t), compose.Deps{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if err := app.SeedDemoResorts(dynamotest.Context(t), st.Resorts); err != nil {
		t.Fatal(err)
	}
	apitest.Run(t, apitest.Start(t, cfg))
}

func TestEC2ProfileFailsFastWhenTablesAreMissing(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	ec2Env(t, sqstest.Region)
	cfg := ec2Config(t, "sqs", append([]string{"--dynamo-endpoint", endpoint, "--dynamo-table-prefix", dynamotest.Prefix(t)}, ec2SQS(t, closedURL(t))...)...)
	buildFails(t, cfg, "DynamoDB table", "skierTable", "does not exist", "skiapi tables create")
}

func TestEC2ProfileFailsFastWhenSQSIsUnreachable(t *testing.T) {
	ec2Env(t, sqstest.Region)
	closed := closedURL(t)
	cfg := ec2Config(t, "sqs", append(ec2Tables(t), ec2SQS(t, closed)...)...)
	buildFails(t, cfg, domain.ErrUnavailable.Error(), "sqs at "+closed, cfg.SQS.Queue)
}

func TestEC2ProfileFailsFastWhenTheSQSQueueIsMissing(t *testing.T) {
	ec2Env(t, sqstest.Region)
	cfg := ec2Config(t, "sqs", append(ec2Tables(t), ec2SQS(t, sqstest.EndpointOrStart(t))...)...)
	buildFails(t, cfg, "queue "+cfg.SQS.Queue+" does not exist", "skiapi queues create")
}

// TestEC2ProfileFailsFastWhenRabbitMQIsUnreachable: with the stack's
// Amazon MQ choice the profile runs RabbitMQ on the broker AMQP_URL names.
func TestEC2ProfileFailsFastWhenRabbitMQIsUnreachable(t *testing.T) {
	ec2Env(t, sqstest.Region)
	addr := apitest.ClosedAddr(t)
	ec2AmazonMQEnv(t, "amqp://guest:guest@"+addr+"/")
	cfg := ec2Config(t, "rabbitmq", ec2Tables(t)...)
	buildFails(t, cfg, "rabbitmq", "unreachable", addr)
}

func TestEC2ProfileFailsFastWhenRegionIsMissing(t *testing.T) {
	ec2Env(t, "")
	cfg := ec2Config(t, "sqs", append([]string{"--dynamo-endpoint", closedURL(t)}, ec2SQS(t, closedURL(t))...)...)
	buildFails(t, cfg, "region missing", "AWS_REGION")
}

func TestEC2ProfileFailsFastWhenDynamoDBIsUnreachable(t *testing.T) {
	ec2Env(t, sqstest.Region)
	cfg := ec2Config(t, "sqs", append([]string{"--dynamo-endpoint", closedURL(t)}, ec2SQS(t, closedURL(t))...)...)
	buildFails(t, cfg, "DynamoDB", "describe table")
}
