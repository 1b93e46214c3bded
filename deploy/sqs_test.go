package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// The SQS side of the template held to the adapter: each role's SQS
// actions are those adapters/sqs calls in that role, recorded through the
// stand-in's strict proxy (adapters/sqs/sqssim) as the DynamoDB actions are
// recorded through the SDK (template_test.go), and the queues' attributes
// are those `skiapi queues create` (sqs.CreateQueues) sets.

// sqsRecorder writes down, for one client (a role), the SQS actions it
// calls on each queue: it is the Observe of a strict proxy of its own in
// front of the stand-in. A batch call is recorded under its single
// action's name, the one IAM authorizes it by (SendMessageBatch,
// DeleteMessageBatch and ChangeMessageVisibilityBatch need sqs:SendMessage,
// sqs:DeleteMessage and sqs:ChangeMessageVisibility). It also keeps the
// attributes each CreateQueue asked for.
type sqsRecorder struct {
	mu      sync.Mutex
	actions map[string]map[string]bool   // queue name -> "sqs:Action"
	created map[string]map[string]string // queue name -> CreateQueue's Attributes
}

// newSQSRecorder starts a strict proxy in front of the stand-in that
// records through a new recorder, and returns both; the proxy stops when
// the test ends.
func newSQSRecorder(t *testing.T) (*sqsRecorder, string) {
	t.Helper()
	r := &sqsRecorder{actions: map[string]map[string]bool{}, created: map[string]map[string]string{}}
	px := sqstest.NewProxyOf(t, sqstest.UpstreamOrStart(t), sqssim.Options{Observe: r.observe})
	return r, px.URL
}

func (r *sqsRecorder) observe(op string, body []byte) {
	var req struct {
		QueueUrl, QueueName string
		Attributes          map[string]string
	}
	_ = json.Unmarshal(body, &req)
	queue := req.QueueName
	if queue == "" && req.QueueUrl != "" {
		queue = path.Base(req.QueueUrl)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.actions[queue] == nil {
		r.actions[queue] = map[string]bool{}
	}
	r.actions[queue]["sqs:"+strings.TrimSuffix(op, "Batch")] = true
	if op == "CreateQueue" {
		r.created[queue] = req.Attributes
	}
}

// byResource is what the recorder saw, by the template's queue resource:
// RideQueue for a ride queue (a name in rideQueues), RideDeadLetterQueue
// for its dead-letter queue, each with its sorted actions. A call on any
// other queue, or naming none, fails the test.
func (r *sqsRecorder) byResource(t *testing.T, rideQueues map[string]bool) map[string][]string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for queue, actions := range r.actions {
		res := "RideQueue"
		if ride, ok := strings.CutSuffix(queue, sqs.DeadLetterSuffix); ok && rideQueues[ride] {
			res = "RideDeadLetterQueue"
		} else if !rideQueues[queue] {
			t.Errorf("SQS calls %v on queue %q, which is neither a ride queue of the run nor its dead-letter queue", slices.Sorted(maps.Keys(actions)), queue)
			continue
		}
		out[res] = append(out[res], slices.Collect(maps.Keys(actions))...)
	}
	for res := range out {
		sort.Strings(out[res])
		out[res] = slices.Compact(out[res])
	}
	return out
}

// createdWith is the attributes the CreateQueue of queue asked for.
func (r *sqsRecorder) createdWith(queue string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.created[queue]
}

// sqsTestConfig is the adapter's configuration for a queue of the test's
// own through endpoint, with waits short enough for a test. A depth
// sample is hardly reused: the API's queue learns of the consumer's
// deletes only from SQS, so the contract's full queue, once a message is
// acked, takes a publish again only after a sample taken since.
func sqsTestConfig(queue, endpoint string) sqs.Config {
	return sqs.Config{
		Queue: queue, Endpoint: endpoint, Region: sqstest.Region,
		WaitTime: time.Second, VisibilityTimeout: 2 * time.Second, DepthInterval: time.Millisecond,
	}
}

// bothReadDepth is the depth as the service reads it: every process,
// whatever its role, reads it for /readyz and the metrics (the API's
// admission control too), so each depth the contract asks for is read by
// both roles' queues; the API's answer is returned (its estimate of rides
// per message comes from the messages it published).
type bothReadDepth struct{ api, consumer *sqs.Queue }

func (b bothReadDepth) Depth(ctx context.Context) (ports.QueueDepth, error) {
	if _, err := b.consumer.Depth(ctx); err != nil {
		return ports.QueueDepth{}, err
	}
	return b.api.Depth(ctx)
}

// runtimeSQSActions runs the queue contract suite (test/queuetest) with
// each port held by the role that calls it in the service: Publisher by
// the API (app.Ingest), Subscriber by the consumer (app.Persister: Ack,
// Nack, Reject, Close), QueueStats by both (bothReadDepth), and each role
// opening the queues itself (Open, as each process does at start). Each
// role reaches the stand-in through its own recording proxy. The queues
// are made beforehand through no recorder (by the stack, or an operator's
// `skiapi queues create`). The result maps each role to the template's
// queue resources and the actions called on them.
func runtimeSQSActions(t *testing.T) map[string]map[string][]string {
	t.Helper()
	apiRec, apiEndpoint := newSQSRecorder(t)
	consumerRec, consumerEndpoint := newSQSRecorder(t)
	operator := sqstest.EndpointOrStart(t)
	var mu sync.Mutex
	rideQueues := map[string]bool{}
	t.Run("contract", func(t *testing.T) {
		queuetest.Run(t, func(t *testing.T, capacity int) queuetest.Queue {
			name := sqstest.QueueName(t)
			mu.Lock()
			rideQueues[name] = true
			mu.Unlock()
			ctx := sqstest.Context(t)
			if _, err := sqs.CreateQueues(ctx, sqsTestConfig(name, operator)); err != nil {
				t.Fatalf("CreateQueues: %v", err)
			}
			sqstest.DeleteQueuesAtEnd(t, operator, name, name+sqs.DeadLetterSuffix)
			open := func(endpoint string, capacity int) *sqs.Queue {
				cfg := sqsTestConfig(name, endpoint)
				cfg.MaxMessages = capacity
				q, err := sqs.Open(ctx, cfg)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				t.Cleanup(func() { _ = q.Close(); _ = q.Disconnect() })
				return q
			}
			api, consumer := open(apiEndpoint, capacity), open(consumerEndpoint, 0)
			return queuetest.Queue{Pub: api, Sub: consumer, Stats: bothReadDepth{api, consumer}}
		})
	})
	if t.Failed() {
		t.Fatal("the recording run failed; the recorded actions would be incomplete")
	}
	return map[string]map[string][]string{
		roleAPI:      apiRec.byResource(t, rideQueues),
		roleConsumer: consumerRec.byResource(t, rideQueues),
	}
}

// TestTemplateIAMAllowsEachRoleExactlyTheSQSActionsItCalls: with SQS each
// instance role may call exactly the SQS actions adapters/sqs calls in
// that role, on each queue (recorded by runtimeSQSActions): the API sends
// to the ride queue, and finds and reads the depth of both queues; the
// consumer also finds and reads both, receives, deletes and defers
// (changes the visibility of) the ride queue's messages and sends what
// the store refuses to the dead-letter queue. Nothing missing (the role
// would fail in production) and nothing more (least privilege: neither
// role may receive what the other sends, purge or delete a queue). With
// Amazon MQ neither has an SQS action, and no other role has one.
func TestTemplateIAMAllowsEachRoleExactlyTheSQSActionsItCalls(t *testing.T) {
	tpl := loadTemplate(t)
	called := runtimeSQSActions(t)
	roles := resources(t, tpl, "AWS::IAM::Role")
	for _, role := range []string{roleAPI, roleConsumer} {
		iamRole := iamRoleOf[role]
		t.Logf("%s calls %v", role, called[role])
		if len(called[role]["RideQueue"]) == 0 || len(called[role]["RideDeadLetterQueue"]) == 0 {
			t.Errorf("the %s role was recorded calling %v; want calls on both queues (is the recorder seeing its requests?)", role, called[role])
		}
		granted := sqsGrants(t, roles[iamRole], queueConditions("sqs"))
		for _, res := range []string{"RideQueue", "RideDeadLetterQueue"} {
			for _, a := range called[role][res] {
				if !slices.Contains(granted[res], a) {
					t.Errorf("the %s role calls %s on %s but %s does not allow it", role, a, res, iamRole)
				}
			}
			for _, a := range granted[res] {
				if !slices.Contains(called[role][res], a) {
					t.Errorf("%s allows %s on %s, which the %s role never calls", iamRole, a, res, role)
				}
			}
		}
		for res := range granted {
			if res != "RideQueue" && res != "RideDeadLetterQueue" {
				t.Errorf("%s allows %v on %s; only the two queues are the roles'", iamRole, granted[res], res)
			}
		}
		if got := sqsGrants(t, roles[iamRole], queueConditions("rabbitmq")); len(got) != 0 {
			t.Errorf("%s with Queue=rabbitmq allows SQS actions %v; want none", iamRole, got)
		}
	}
	for name, role := range roles {
		if name == iamRoleOf[roleAPI] || name == iamRoleOf[roleConsumer] {
			continue
		}
		if raw, _ := json.Marshal(role); strings.Contains(string(raw), `"sqs:`) {
			t.Errorf("role %s allows SQS actions; only the instance roles may", name)
		}
	}
}

// stackOnlyQueueProperties are the queues' properties the stack sets and
// `skiapi queues create` does not: the name (CreateQueue's own argument),
// and the dead-letter queue's redrive-allow policy (only the stack's ride
// queue may move messages into it, where a queue made by queues create
// accepts any of the account's, as SQS's default allows).
var stackOnlyQueueProperties = []string{"QueueName", "RedriveAllowPolicy"}

// TestTemplateQueuesAreSetAsQueuesCreateSetsThem: the stack's two queues
// have the attributes `skiapi queues create` gives a new pair with the
// service's defaults (the instances run with them: their env file sets
// only the queue's name), as recorded from its CreateQueue requests: the
// visibility timeout, the retention, the long poll, the redrive to the
// dead-letter queue after the same receives, and SQS-managed encryption.
// So an operator's `skiapi queues create` on the stack's queues finds
// them as configured (docs/operations.md, Deploy step 5) and changes
// nothing, and a queue made without the stack behaves as the stack's.
func TestTemplateQueuesAreSetAsQueuesCreateSetsThem(t *testing.T) {
	rec, endpoint := newSQSRecorder(t)
	cfg := compose.DefaultConfig()
	cfg.Queue = "sqs"
	cfg.SQS.Queue = sqstest.QueueName(t)
	cfg.SQS.Endpoint = endpoint
	cfg.Dynamo.Region = sqstest.Region
	sqstest.DeleteQueuesAtEnd(t, endpoint, cfg.SQS.Queue, cfg.SQS.Queue+sqs.DeadLetterSuffix)
	if _, err := compose.QueueOf(cfg).CreateQueues(sqstest.Context(t), cfg); err != nil {
		t.Fatalf("queues create: %v", err)
	}
	queues := resourceEntries(t, loadTemplate(t), "AWS::SQS::Queue")
	for res, name := range map[string]string{"RideQueue": cfg.SQS.Queue, "RideDeadLetterQueue": cfg.SQS.Queue + sqs.DeadLetterSuffix} {
		created := rec.createdWith(name)
		if len(created) == 0 {
			t.Errorf("queues create made %s with no attributes recorded; want its CreateQueue seen", name)
			continue
		}
		props := asMap(queues[res]["Properties"])
		for attr, want := range created {
			got, ok := props[attr]
			switch {
			case !ok:
				t.Errorf("%s does not set %s; queues create sets it to %s", res, attr, want)
			case attr == "RedrivePolicy":
				var policy struct {
					DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
					MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
				}
				if err := json.Unmarshal([]byte(want), &policy); err != nil {
					t.Fatalf("queues create's RedrivePolicy %s: %v", want, err)
				}
				gp := asMap(got)
				if !strings.HasSuffix(policy.DeadLetterTargetArn, ":"+name+sqs.DeadLetterSuffix) ||
					fmt.Sprint(gp["deadLetterTargetArn"]) != "map[Fn::GetAtt:[RideDeadLetterQueue Arn]]" ||
					fmt.Sprint(gp["maxReceiveCount"]) != strings.Trim(string(policy.MaxReceiveCount), `"`) {
					t.Errorf("%s's RedrivePolicy is %v; queues create sets %s (the dead-letter queue after as many receives)", res, got, want)
				}
			case fmt.Sprint(got) != want:
				t.Errorf("%s sets %s to %v; queues create sets %s", res, attr, got, want)
			}
		}
		for attr := range props {
			if _, ok := created[attr]; !ok && !slices.Contains(stackOnlyQueueProperties, attr) {
				t.Errorf("%s sets %s, which queues create does not: a queue made without the stack would differ", res, attr)
			}
		}
	}
}
