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
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/dynamotest"
)

// ec2Env sets the process environment as the ec2 launch templates do
// (SKI_PROFILE, AMQP_URL, AWS_REGION; credentials, here dummy ones, for the
// SDK's default chain), and points the instance-metadata client at a closed
// port so that nothing on this machine is mistaken for EC2.
func ec2Env(t *testing.T, amqpURL, region string) {
	t.Helper()
	t.Setenv("SKI_PROFILE", "ec2")
	t.Setenv("AMQP_URL", amqpURL)
	if region == "" {
		// t.Setenv records the value to restore after the test; the
		// variable must then be absent, not empty.
		t.Setenv("AWS_REGION", "")
		os.Unsetenv("AWS_REGION")
		t.Setenv("AWS_DEFAULT_REGION", "")
		os.Unsetenv("AWS_DEFAULT_REGION")
	} else {
		t.Setenv("AWS_REGION", region)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", closedURL(t))
}

// ec2Config parses the command line an operator would use to run the ec2
// profile somewhere other than AWS: the profile from the environment, only
// the endpoints and names overridden.
func ec2Config(t *testing.T, args ...string) compose.Config {
	t.Helper()
	fs := flag.NewFlagSet("skiapi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := compose.ParseConfig(fs, append([]string{"--listen", "127.0.0.1:0"}, args...))
	if err != nil {
		t.Fatalf("parse ec2 config: %v", err)
	}
	if cfg.Store != "dynamo-sharded" || cfg.Queue != "rabbitmq" || cfg.LogFormat != "json" {
		t.Fatalf("SKI_PROFILE=ec2 gave store %s, queue %s, logs %s", cfg.Store, cfg.Queue, cfg.LogFormat)
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

// TestEC2ProfileEndToEnd runs the HTTP suite on the production layout (the
// ec2 profile: DynamoDB sharded model, RabbitMQ, JSON logs) with only the
// DynamoDB endpoint pointed at dynalite and the broker at the local one.
func TestEC2ProfileEndToEnd(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	amqpURL, amqpPrefix := rabbitTopology(t, "ec2")
	ec2Env(t, amqpURL, dynamotest.Region)
	prefix := dynamotest.Prefix(t)
	cfg := ec2Config(t, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", prefix, "--amqp-prefix", amqpPrefix)
	if err := dynamo.CreateTables(dynamotest.Context(t), dynamosim.ClientFor(endpoint), prefix, dynamo.ModelSharded); err != nil {
		t.Fatalf("CreateTables: %v", err)
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
	ec2Env(t, amqptest.URL(), dynamotest.Region)
	cfg := ec2Config(t, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", dynamotest.Prefix(t))
	buildFails(t, cfg, "DynamoDB table", "skierTable", "does not exist", "skiapi tables create")
}

func TestEC2ProfileFailsFastWhenRabbitMQIsUnreachable(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	closed := closedURL(t)
	ec2Env(t, "amqp://guest:guest@"+strings.TrimPrefix(closed, "http://")+"/", dynamotest.Region)
	prefix := dynamotest.Prefix(t)
	if err := dynamo.CreateTables(dynamotest.Context(t), dynamosim.ClientFor(endpoint), prefix, dynamo.ModelSharded); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	cfg := ec2Config(t, "--dynamo-endpoint", endpoint, "--dynamo-table-prefix", prefix)
	buildFails(t, cfg, "rabbitmq", "unreachable", strings.TrimPrefix(closed, "http://"))
}

func TestEC2ProfileFailsFastWhenRegionIsMissing(t *testing.T) {
	ec2Env(t, amqptest.URL(), "")
	cfg := ec2Config(t, "--dynamo-endpoint", closedURL(t))
	buildFails(t, cfg, "region missing", "AWS_REGION")
}

func TestEC2ProfileFailsFastWhenDynamoDBIsUnreachable(t *testing.T) {
	ec2Env(t, amqptest.URL(), dynamotest.Region)
	cfg := ec2Config(t, "--dynamo-endpoint", closedURL(t))
	buildFails(t, cfg, "DynamoDB", "describe table")
}
