package compose

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/dynamo"
)

func parseSources(t *testing.T, args []string, env map[string]string) (Config, Sources, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return ParseConfigSources(fs, args, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

// TestProfileEC2ChoosesDynamoSQSAndJSONLogs: the profile's queue is the
// stack's default, Amazon SQS, so an operator's command under the profile
// needs no --queue.
func TestProfileEC2ChoosesDynamoSQSAndJSONLogs(t *testing.T) {
	c, src, err := parseSources(t, []string{"--profile", "ec2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "dynamo-sharded" || c.Queue != "sqs" || c.LogFormat != "json" || c.Role != "all" {
		t.Errorf("ec2 profile gave store %q queue %q log-format %q role %q", c.Store, c.Queue, c.LogFormat, c.Role)
	}
	if src["store"] != "profile ec2" || src["queue"] != "profile ec2" || src["role"] != "default" || src["profile"] != "flag" {
		t.Errorf("sources: store %q, queue %q, role %q, profile %q", src["store"], src["queue"], src["role"], src["profile"])
	}
}

// TestProfileEC2QueueIsRabbitMQWhenTheEnvironmentSaysSo: the stack's
// Amazon MQ choice writes SKI_QUEUE=rabbitmq and the broker in AMQP_URL;
// the profile then runs RabbitMQ on that broker, and --queue wins over both.
func TestProfileEC2QueueIsRabbitMQWhenTheEnvironmentSaysSo(t *testing.T) {
	env := map[string]string{"SKI_PROFILE": "ec2", "SKI_QUEUE": "rabbitmq", "AMQP_URL": "amqps://skidata-app@mq:5671/"}
	c, src, err := parseSources(t, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Queue != "rabbitmq" || src["queue"] != "env SKI_QUEUE" || c.AMQP.URL != env["AMQP_URL"] || src["amqp-url"] != "profile ec2 via AMQP_URL" {
		t.Errorf("queue %q (%s), amqp-url %q (%s); want rabbitmq from SKI_QUEUE on the broker AMQP_URL names", c.Queue, src["queue"], c.AMQP.URL, src["amqp-url"])
	}
	if c, src, err := parseSources(t, []string{"--queue", "sqs"}, env); err != nil || c.Queue != "sqs" || src["queue"] != "flag" {
		t.Errorf("--queue sqs under SKI_QUEUE=rabbitmq: queue %q (%s), err %v; want sqs from the flag", c.Queue, src["queue"], err)
	}
}

// TestProfileEC2DoesNotSeedTheDemoResorts: the ten demo resorts must not
// land in a production resort table at start; `skiapi seed` loads them on
// purpose.
func TestProfileEC2DoesNotSeedTheDemoResorts(t *testing.T) {
	c, src, err := parseSources(t, []string{"--profile", "ec2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Catalog.SeedDemo || src["seed-demo"] != "profile ec2" {
		t.Errorf("ec2 profile: seed-demo %v from %s; want false from the profile", c.Catalog.SeedDemo, src["seed-demo"])
	}
	if c, _, _ := parseSources(t, nil, nil); !c.Catalog.SeedDemo {
		t.Error("without a profile the demo resorts are not seeded; want them (memory mode answers with them)")
	}
}

// Each row sets --queue-capacity's neighbour --store at some levels and
// says which must win: flag > SKI_ variable > profile > built-in default.
func TestProfilePrecedenceFlagOverEnvOverProfileOverDefault(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		env       map[string]string
		wantStore string
		wantSrc   string
	}{
		{"default only", nil, nil, "memory", "default"},
		{"profile over default", nil, map[string]string{"SKI_PROFILE": "ec2"}, "dynamo-sharded", "profile ec2"},
		{"env over profile", nil, map[string]string{"SKI_PROFILE": "ec2", "SKI_STORE": "dynamo-abandoned"}, "dynamo-abandoned", "env SKI_STORE"},
		{"flag over env and profile", []string{"--store", "memory"}, map[string]string{"SKI_PROFILE": "ec2", "SKI_STORE": "dynamo-abandoned"}, "memory", "flag"},
		{"flag profile, env store", []string{"--profile", "ec2"}, map[string]string{"SKI_STORE": "memory"}, "memory", "env SKI_STORE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, src, err := parseSources(t, tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Store != tc.wantStore || src["store"] != tc.wantSrc {
				t.Errorf("store = %q (%s); want %q (%s)", c.Store, src["store"], tc.wantStore, tc.wantSrc)
			}
		})
	}
}

func TestProfileEC2TakesAMQPURLAndAWSRegionBelowSKIVariables(t *testing.T) {
	env := map[string]string{"SKI_PROFILE": "ec2", "AMQP_URL": "amqp://u:p@mq:5671/", "AWS_REGION": "eu-central-1"}
	c, src, err := parseSources(t, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.AMQP.URL != "amqp://u:p@mq:5671/" || src["amqp-url"] != "profile ec2 via AMQP_URL" {
		t.Errorf("amqp-url = %q (%s)", c.AMQP.URL, src["amqp-url"])
	}
	if c.Dynamo.Region != "eu-central-1" || src["dynamo-region"] != "profile ec2 via AWS_REGION" {
		t.Errorf("dynamo-region = %q (%s)", c.Dynamo.Region, src["dynamo-region"])
	}
	env["SKI_AMQP_URL"] = "amqp://other/"
	c, _, err = parseSources(t, []string{"--dynamo-region", "us-east-1"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.AMQP.URL != "amqp://other/" || c.Dynamo.Region != "us-east-1" {
		t.Errorf("SKI_AMQP_URL and --dynamo-region must win over the profile: amqp %q region %q", c.AMQP.URL, c.Dynamo.Region)
	}
}

func TestProfileAWSVariablesIgnoredWithoutProfile(t *testing.T) {
	c, _, err := parseSources(t, nil, map[string]string{"AMQP_URL": "amqp://x/"})
	if err != nil {
		t.Fatal(err)
	}
	if c.AMQP.URL != DefaultConfig().AMQP.URL {
		t.Errorf("AMQP_URL without a profile changed amqp-url to %q", c.AMQP.URL)
	}
}

func TestProfileUnknownIsRefusedNamingTheChoices(t *testing.T) {
	_, _, err := parseSources(t, []string{"--profile", "gcp"}, nil)
	if err == nil || !strings.Contains(err.Error(), `"gcp"`) || !strings.Contains(err.Error(), "ec2") {
		t.Fatalf("err = %v; want it to name gcp and the choices", err)
	}
}

// redact's own tests cover the forms of a secret; what MaskSecrets adds
// is the comma-separated node list of --amqp-url, where the URL parser
// alone would read the second node's password as part of the first URL.
func TestMaskSecretsHidesEveryNodesPasswordOfAnAMQPList(t *testing.T) {
	in := "amqp://u:first@mq1:5672/,amqp://u:second@mq2:5672/, amqps://u:third@mq3:5671/"
	got := MaskSecrets(in)
	for _, secret := range []string{"first", "second", "third"} {
		if strings.Contains(got, secret) {
			t.Errorf("MaskSecrets(%q) = %q; %q leaked", in, got, secret)
		}
	}
	for _, host := range []string{"mq1:5672", "mq2:5672", "mq3:5671"} {
		if !strings.Contains(got, "u:xxxxx@"+host) {
			t.Errorf("MaskSecrets(%q) = %q; want u:xxxxx@%s kept readable", in, got, host)
		}
	}
}

func TestEffectiveConfigListsEveryFlagWithSourceAndMasksSecrets(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := map[string]string{"SKI_PROFILE": "ec2", "AMQP_URL": "amqp://u:topsecret@mq/"}
	_, src, err := ParseConfigSources(fs, []string{"--database-url", "postgres://a:pw2@h/db"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	out := EffectiveConfig(fs, src)
	if strings.Contains(out, "topsecret") || strings.Contains(out, "pw2") {
		t.Errorf("a password leaked:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if len(lines) != n {
		t.Errorf("%d lines for %d flags:\n%s", len(lines), n, out)
	}
	for _, want := range []string{
		"amqp-url = amqp://u:xxxxx@mq/ (profile ec2 via AMQP_URL)",
		"database-url = postgres://a:xxxxx@h/db (flag)",
		"store = dynamo-sharded (profile ec2)",
		"queue = sqs (profile ec2)",
		"profile = ec2 (env SKI_PROFILE)",
		"listen = :8080 (profile ec2)", // the load balancer reaches it
		"role = all (default)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing line %q in:\n%s", want, out)
		}
	}
}

// fakeIMDS answers the two IMDSv2 calls GetRegion makes: a session token,
// then the instance identity document, which holds the region. Before
// each answer it calls before (may be nil) with the request.
func fakeIMDS(t *testing.T, region string, before func(*http.Request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before(r)
		}
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			io.WriteString(w, "token")
		case r.Method == http.MethodGet && r.URL.Path == "/latest/dynamic/instance-identity/document":
			if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "token" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"region":%q,"instanceId":"i-0123","availabilityZone":%q}`, region, region+"a")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// discardLog is a logger whose lines go nowhere.
var discardLog = slog.New(slog.DiscardHandler)

func TestInstanceRegionComesFromInstanceMetadata(t *testing.T) {
	t.Setenv(envIMDSEndpoint, fakeIMDS(t, "eu-north-1", nil))
	got, err := instanceRegion(context.Background(), discardLog)
	if err != nil {
		t.Fatal(err)
	}
	if got != "eu-north-1" {
		t.Errorf("region = %q; want eu-north-1", got)
	}
}

// TestInstanceRegionIsAnnouncedBeforeItAsks: off EC2 the question waits
// for its timeout, so before asking the log says what it asks, for how
// long, and which settings avoid asking. The log is JSON, as the ec2
// profile writes it, where the timeout reads "2s", not nanoseconds.
func TestInstanceRegionIsAnnouncedBeforeItAsks(t *testing.T) {
	var logged strings.Builder
	announced := make(chan struct{})
	var once sync.Once
	log := newLoggerTo(writerFunc(func(p []byte) (int, error) {
		once.Do(func() { close(announced) })
		return logged.Write(p)
	}), Config{LogFormat: "json", LogLevel: "info"})
	var asked atomic.Int32
	t.Setenv(envIMDSEndpoint, fakeIMDS(t, "eu-north-1", func(r *http.Request) {
		asked.Add(1)
		select {
		case <-announced:
		default:
			t.Errorf("%s %s reached the metadata service before any log line", r.Method, r.URL.Path)
		}
	}))
	if _, err := regionOrInstance(Config{}, log)(context.Background()); err != nil {
		t.Fatal(err)
	}
	if asked.Load() == 0 {
		t.Fatal("the metadata service was not asked")
	}
	for _, want := range []string{"instance metadata", "AWS_REGION", "--dynamo-region", `"timeout":"` + imdsTimeout.String() + `"`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log %q does not say %q", logged.String(), want)
		}
	}
}

// TestRegionGivenIsNotAskedFor: with a region set nothing is asked and
// nothing announced.
func TestRegionGivenIsNotAskedFor(t *testing.T) {
	var logged strings.Builder
	t.Setenv(envIMDSEndpoint, fakeIMDS(t, "eu-north-1", func(r *http.Request) {
		t.Errorf("%s %s asked with the region set", r.Method, r.URL.Path)
	}))
	cfg := Config{Dynamo: dynamo.Config{Region: "us-west-2"}}
	got, err := regionOrInstance(cfg, newLoggerTo(&logged, Config{LogFormat: "text", LogLevel: "info"}))(context.Background())
	if err != nil || got != "us-west-2" || logged.Len() != 0 {
		t.Errorf("region %q, err %v, log %q; want us-west-2, no error, no log", got, err, logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Off EC2 nothing answers at the metadata address: a server here that
// drops every connection unanswered stands in for it (an address whose
// listener was closed could be taken by another process meanwhile).
func TestInstanceRegionMissingFailsNamingTheRegion(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv(envIMDSEndpoint, srv.URL)
	_, err := instanceRegion(context.Background(), discardLog)
	if err == nil || !strings.Contains(err.Error(), "region missing") || !strings.Contains(err.Error(), "AWS_REGION") || !strings.Contains(err.Error(), "--dynamo-region") {
		t.Fatalf("err = %v; want it to say the region is missing and how to set it", err)
	}
}

// TestInstanceRegionGivesUpSoonWhenNothingAnswers: off EC2 the metadata
// address may take the requests and never answer (a firewall that drops
// them); a start there fails within a few seconds, naming the settings,
// rather than hanging in its unit's start.
func TestInstanceRegionGivesUpSoonWhenNothingAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // until the client gives up
	}))
	t.Cleanup(srv.Close)
	t.Setenv(envIMDSEndpoint, srv.URL)
	start := time.Now()
	_, err := instanceRegion(context.Background(), discardLog)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("gave up after %s; want within 3 s", took.Round(time.Millisecond))
	}
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") || !strings.Contains(err.Error(), "--dynamo-region") {
		t.Fatalf("err = %v; want it to name AWS_REGION and --dynamo-region", err)
	}
}

// TestAMQPURLListIsCheckedAndMaskedURLByURL: --amqp-url takes every node
// of a cluster, comma-separated; each URL is checked like one URL, and the
// effective configuration (and the log) show each host with its password
// masked, not the list masked as one URL (which would hide the hosts).
func TestAMQPURLListIsCheckedAndMaskedURLByURL(t *testing.T) {
	list := "amqp://u:pw1@n1:5672/,amqp://u:pw2@n2:5672/,amqp://u:pw3@n3:5672/"
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, src, err := ParseConfigSources(fs, []string{"--queue", "rabbitmq", "--amqp-url", list}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if c.AMQP.URL != list {
		t.Errorf("amqp-url = %q; want the list as given", c.AMQP.URL)
	}
	want := "amqp-url = amqp://u:xxxxx@n1:5672/, amqp://u:xxxxx@n2:5672/, amqp://u:xxxxx@n3:5672/ (flag)\n"
	out := EffectiveConfig(fs, src)
	if !strings.Contains(out, want) {
		t.Errorf("missing line %q in:\n%s", want, out)
	}
	var logs strings.Builder
	newLoggerTo(&logs, Config{LogFormat: "text", LogLevel: "info"}).Info("starting "+list, "url", list)
	for _, pw := range []string{"pw1", "pw2", "pw3"} {
		if strings.Contains(out, pw) || strings.Contains(logs.String(), pw) {
			t.Errorf("password %s leaked:\n%s\n%s", pw, out, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "n1:5672") || !strings.Contains(logs.String(), "n2:5672") {
		t.Errorf("the log lost a host of the list:\n%s", logs.String())
	}

	for _, bad := range []string{list + ",", "amqp://u:pw1@n1/,http://u:pw2@n2/"} {
		_, _, err := parseSources(t, []string{"--queue", "rabbitmq", "--amqp-url", bad}, nil)
		if err == nil || !strings.Contains(err.Error(), "--amqp-url") {
			t.Errorf("--amqp-url %q: err %v; want one naming --amqp-url", bad, err)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("--amqp-url %q: the error shows a password: %v", bad, err)
		}
	}
}
