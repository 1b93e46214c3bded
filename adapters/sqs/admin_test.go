package sqs_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// attributes reads a queue's attributes through the test server.
func attributes(t *testing.T, name string) map[string]string {
	t.Helper()
	c := sqssim.Client(sqstest.Endpoint(t))
	u, err := c.GetQueueUrl(sqstest.Context(t), &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("find queue %s: %v", name, err)
	}
	out, err := c.GetQueueAttributes(sqstest.Context(t), &awssqs.GetQueueAttributesInput{
		QueueUrl:       u.QueueUrl,
		AttributeNames: []types.QueueAttributeName{"QueueArn", "VisibilityTimeout", "ReceiveMessageWaitTimeSeconds", "MessageRetentionPeriod", "RedrivePolicy", "SqsManagedSseEnabled"},
	})
	if err != nil {
		t.Fatalf("attributes of %s: %v", name, err)
	}
	return out.Attributes
}

func redrive(t *testing.T, attrs map[string]string) (target string, count int) {
	t.Helper()
	var p struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &p); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", attrs["RedrivePolicy"], err)
	}
	if err := json.Unmarshal([]byte(strings.Trim(string(p.MaxReceiveCount), `"`)), &count); err != nil {
		t.Fatalf("maxReceiveCount %s: %v", p.MaxReceiveCount, err)
	}
	return p.DeadLetterTargetArn, count
}

// TestCreateQueuesMakesBothQueuesAndRunningAgainChangesNothing: the
// dead-letter queue and the ride queue are made with the configured
// attributes and a redrive policy between them; running it again changes
// nothing; running it with other settings sets exactly the attributes
// that differ.
func TestCreateQueuesMakesBothQueuesAndRunningAgainChangesNothing(t *testing.T) {
	cfg := testConfig(t, sqs.Config{MaxReceiveCount: 3})
	dlq := cfg.Queue + sqs.DeadLetterSuffix
	sqstest.DeleteQueuesAtEnd(t, sqstest.Endpoint(t), cfg.Queue, dlq)
	st, err := sqs.CreateQueues(sqstest.Context(t), cfg)
	if err != nil {
		t.Fatalf("CreateQueues: %v", err)
	}
	if len(st) != 2 || st[0].Name != dlq || st[1].Name != cfg.Queue || !st[0].Created || !st[1].Created || st[0].URL == "" || st[1].URL == "" {
		t.Fatalf("CreateQueues = %+v; want %s then %s, both created, with their URLs", st, dlq, cfg.Queue)
	}
	rides, dead := attributes(t, cfg.Queue), attributes(t, dlq)
	for _, c := range []struct{ queue, attr, have, want string }{
		{cfg.Queue, "VisibilityTimeout", rides["VisibilityTimeout"], "2"},
		{cfg.Queue, "ReceiveMessageWaitTimeSeconds", rides["ReceiveMessageWaitTimeSeconds"], "1"},
		{cfg.Queue, "MessageRetentionPeriod", rides["MessageRetentionPeriod"], "1209600"},
		{cfg.Queue, "SqsManagedSseEnabled", rides["SqsManagedSseEnabled"], "true"},
		{dlq, "MessageRetentionPeriod", dead["MessageRetentionPeriod"], "1209600"},
		{dlq, "SqsManagedSseEnabled", dead["SqsManagedSseEnabled"], "true"},
	} {
		if c.have != c.want {
			t.Errorf("%s's %s = %q; want %q", c.queue, c.attr, c.have, c.want)
		}
	}
	if target, count := redrive(t, rides); target != dead["QueueArn"] || count != 3 {
		t.Errorf("redrive policy to %s after %d receives; want to %s after 3", target, count, dead["QueueArn"])
	}

	again, err := sqs.CreateQueues(sqstest.Context(t), cfg)
	if err != nil {
		t.Fatalf("CreateQueues again: %v", err)
	}
	for _, s := range again {
		if s.Created || len(s.Updated) > 0 {
			t.Errorf("CreateQueues again: %+v; want nothing created or changed", s)
		}
	}

	cfg.MaxReceiveCount, cfg.VisibilityTimeout = 7, 45*time.Second
	changed, err := sqs.CreateQueues(sqstest.Context(t), cfg)
	if err != nil {
		t.Fatalf("CreateQueues with other settings: %v", err)
	}
	if len(changed[0].Updated) != 0 || !slices.Equal(changed[1].Updated, []string{"RedrivePolicy", "VisibilityTimeout"}) {
		t.Errorf("CreateQueues with another receive count and visibility timeout: %+v; want the ride queue's RedrivePolicy and VisibilityTimeout set, nothing else", changed)
	}
	rides = attributes(t, cfg.Queue)
	if _, count := redrive(t, rides); count != 7 || rides["VisibilityTimeout"] != "45" {
		t.Errorf("after the update: maxReceiveCount %d, VisibilityTimeout %s; want 7 and 45", count, rides["VisibilityTimeout"])
	}
}

func TestOpenWithoutTheQueuesSaysHowToCreateThem(t *testing.T) {
	_, err := sqs.Open(sqstest.Context(t), testConfig(t, sqs.Config{}))
	if err == nil || !strings.Contains(err.Error(), "skiapi queues create") || errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open of a queue that does not exist = %v; want an error naming `skiapi queues create` (not ErrUnavailable)", err)
	}
}

func TestOpenOfAnUnreachableEndpointIsUnavailable(t *testing.T) {
	// Port 1 on loopback: nothing listens there.
	_, err := sqs.Open(sqstest.Context(t), testConfig(t, sqs.Config{Endpoint: "http://127.0.0.1:1"}))
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Open of an unreachable endpoint = %v; want ErrUnavailable naming it", err)
	}
}

// TestOpenByURL: the queue may be given by its URL; the dead-letter
// queue's is derived from it.
func TestOpenByURL(t *testing.T) {
	cfg := testConfig(t, sqs.Config{})
	createQueues(t, cfg)
	st, err := sqs.CreateQueues(sqstest.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Queue = st[1].URL
	q := openQueue(t, cfg)
	rides := queuetest.Rides(2, 1)
	publish(t, q, rides)
	d := take(t, deliveries(t, q), 1)[0]
	if err := q.Reject(sqstest.Context(t), d, d.Rides[:1]); err != nil {
		t.Fatalf("Reject (to the dead-letter queue next to the URL's): %v", err)
	}
	waitDepth(t, q, "one dead letter", deadLetters(1))
}

func TestConfigRefusesWhatSQSWouldRefuse(t *testing.T) {
	for _, c := range []struct {
		what string
		cfg  sqs.Config
	}{
		{"no queue", sqs.Config{}},
		{"a name with a dot", sqs.Config{Queue: "skidata.rides"}},
		{"a FIFO queue", sqs.Config{Queue: "skidata-rides.fifo"}},
		{"a name too long for its dead-letter queue's", sqs.Config{Queue: strings.Repeat("q", 77)}},
		{"negative pollers", sqs.Config{Queue: "q", Pollers: -1}},
		{"a visibility timeout in part seconds", sqs.Config{Queue: "q", VisibilityTimeout: 1500 * time.Millisecond}},
		{"a visibility timeout over 12 hours", sqs.Config{Queue: "q", VisibilityTimeout: 13 * time.Hour}},
		{"a wait over 20 s", sqs.Config{Queue: "q", WaitTime: 21 * time.Second}},
		{"MaxHeld under one receive", sqs.Config{Queue: "q", MaxHeld: 5}},
		{"MaxHeld over the in-flight quota", sqs.Config{Queue: "q", MaxHeld: 120_001}},
		{"a receive count over 1,000", sqs.Config{Queue: "q", MaxReceiveCount: 1001}},
		{"a retention under a minute", sqs.Config{Queue: "q", Retention: 30 * time.Second}},
		{"a retention over 14 days", sqs.Config{Queue: "q", Retention: 15 * 24 * time.Hour}},
	} {
		if _, err := sqs.Open(sqstest.Context(t), c.cfg); err == nil || errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("Open with %s = %v; want a configuration error", c.what, err)
		}
	}
	if _, err := sqs.Open(sqstest.Context(t), sqs.Config{Queue: strings.Repeat("q", 76), Endpoint: "http://127.0.0.1:1", Region: sqstest.Region}); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open with a 76-character name = %v; want it accepted (and the endpoint found unreachable)", err)
	}
}
