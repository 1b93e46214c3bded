package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
)

// The SQS modes run the stand-in the tests run (adapters/sqs/sqssim:
// fauxqs behind the strict proxy). fauxqs keeps nothing: a restart of it
// would lose every message, which SQS, a regional service that stores a
// message in several zones before it answers, does not do; so it is never
// restarted. What a process sees of an SQS outage (a partition, a cut, a
// slow link) its links give; what SQS itself does under load the strict
// proxy injects: throttling, and messages delivered twice.

// The fault kinds the SQS stand-in injects itself.
const (
	Throttle  = "throttle"  // a share of every SQS request answered RequestThrottled
	Duplicate = "duplicate" // a share of the messages received delivered a second time
)

// sqsQueueName is the ride queue of an SQS mode (its dead-letter queue is
// sqsQueueName-dlq).
const sqsQueueName = "nemesis-rides"

// sqsVisibility is the visibility timeout of an SQS mode's queue, shorter
// than the service's 30 s default so that a consumer paused for a fault's
// few seconds outlasts it now and then: SQS then delivers what the
// frozen consumer holds again, to it once it wakes, while it may still
// store the first delivery. The heartbeat extends a held message four
// times a timeout; a pause or a slow link outruns it.
const sqsVisibility = 5 * time.Second

// awsEnv is what a process needs to sign its requests to the stand-ins:
// dummy credentials, no instance metadata to look for, and their one
// region (dynalite takes any).
var awsEnv = []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=" + sqssim.Region}

// standIn is a server the run starts and never restarts (a stand-in that
// would lose its data, where the service it stands for does not).
type standIn struct{ label, address string }

func (s standIn) name() string        { return s.label }
func (s standIn) addr() string        { return s.address }
func (s standIn) restartKind() string { return "" }
func (s standIn) restart(context.Context, time.Duration, *rand.Rand) (string, error) {
	return "", fmt.Errorf("%s is not restarted: its stand-in keeps nothing", s.label)
}

// sqsQueue is the SQS stand-in, its queues made with `skiapi queues
// create` before the processes start.
func sqsQueue(_ context.Context, e env) (*started, error) {
	srv, err := sqssim.Start()
	if err != nil {
		return nil, fmt.Errorf("start the SQS stand-in: %w", err)
	}
	flags := func(endpoint string) []string {
		return []string{"--queue", "sqs", "--sqs-queue", sqsQueueName, "--sqs-endpoint", endpoint, "--sqs-visibility-timeout", sqsVisibility.String()}
	}
	return &started{
		servers: []server{standIn{label: "sqs", address: strings.TrimPrefix(srv.Endpoint, "http://")}},
		flags:   func(addrs []string) []string { return flags("http://" + addrs[0]) },
		prepare: [][]string{append([]string{"queues", "create"}, flags(srv.Endpoint)...)},
		environ: awsEnv,
		kinds:   sqsKinds(srv.Proxy),
		drained: func(ctx context.Context) string {
			return sqsHolds(ctx, srv, func(dead int) { e.deadLetters(dead, flags(srv.Endpoint)) })
		},
		stop: func(string) error {
			srv.Stop()
			return nil
		},
	}, nil
}

// sqsKinds are throttle and duplicate, on the stand-in as a whole: SQS
// throttles an account or a queue, not one client, and a copy of a
// message may come back to whichever consumer receives next.
func sqsKinds(px *sqssim.Proxy) []kind {
	share := func(rng *rand.Rand) float64 { return 0.2 + 0.8*rng.Float64() }
	throttle := target{name: "sqs", busy: "sqs " + Throttle, inject: func(ctx context.Context, d time.Duration, rng *rand.Rand) (string, error) {
		s := share(rng)
		px.RefuseShare(s, sqssim.Throttled)
		sleep(ctx, d)
		px.RefuseShare(0, sqssim.Throttled)
		return fmt.Sprintf("RequestThrottled to %.0f%% of requests for %s", 100*s, d.Round(time.Millisecond)), nil
	}}
	duplicate := target{name: "sqs", busy: "sqs " + Duplicate, inject: func(ctx context.Context, d time.Duration, rng *rand.Rand) (string, error) {
		s := share(rng)
		before := px.Answered()[sqssim.CopiesMade]
		px.Duplicate(s)
		sleep(ctx, d)
		px.Duplicate(0)
		made := px.Answered()[sqssim.CopiesMade] - before
		return fmt.Sprintf("%.0f%% of the messages received for %s delivered again: %d copies", 100*s, d.Round(time.Millisecond), made), nil
	}}
	return []kind{{name: Throttle, targets: []target{throttle}}, {name: Duplicate, targets: []target{duplicate}}}
}

// sqsHolds says what the ride queue still holds, read from fauxqs itself
// (its counts are exact and immediate, where a process's /readyz reports
// a sample up to sqs.Config.DepthInterval old, docs/sqs.md): messages
// waiting, in flight, and copies the strict proxy owes. "" when nothing;
// then dead is told how many messages the dead-letter queue holds, if
// any.
func sqsHolds(ctx context.Context, srv *sqssim.Server, dead func(int)) string {
	c := sqssim.Client(srv.Upstream)
	count := func(name string) (waiting, inFlight int, err error) {
		u, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return 0, 0, err
		}
		out, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		}})
		if err != nil {
			return 0, 0, err
		}
		waiting, err1 := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
		inFlight, err2 := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		return waiting, inFlight, errors.Join(err1, err2)
	}
	waiting, inFlight, err := count(sqsQueueName)
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	if copies := srv.Proxy.Copies(); waiting+inFlight+copies > 0 {
		return fmt.Sprintf("%d messages waiting, %d in flight, %d copies owed", waiting, inFlight, copies)
	}
	w, f, err := count(sqsQueueName + sqs.DeadLetterSuffix)
	if err != nil {
		return fmt.Sprintf("unknown dead letters (%v)", err)
	}
	if w+f > 0 {
		dead(w + f)
	}
	return ""
}

// deadLetters lists the rides of a dead-letter queue that holds n
// messages after the run (`skiapi dlq list` with the queue's flags) into
// the logs: they are rides no retry stored, and the checker reports those
// answered 201 as lost.
func (e env) deadLetters(n int, queueFlags []string) {
	path := filepath.Join(e.logs, "dead-letters.txt")
	cmd := exec.Command(e.skiapi, append([]string{"dlq", "list", "--limit", "100000"}, queueFlags...)...)
	cmd.Env = append(serviceEnv(), awsEnv...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		err = os.WriteFile(path, out, 0o644)
	}
	if err != nil {
		e.say("the dead-letter queue holds %d messages; listing them: %v", n, err)
		return
	}
	e.say("the dead-letter queue holds %d messages: %s", n, path)
}
