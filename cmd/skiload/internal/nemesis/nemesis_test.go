package nemesis

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/test/needs"
)

// lockedBuffer collects a run's progress lines, written from its
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// modeKinds are the fault kinds each mode has, as docs/reliability.md
// lists them: the processes' and the links' in every mode, a restart of
// each server that has one (PostgreSQL, a RabbitMQ node; the stand-ins
// of SQS and DynamoDB have none), and SQS's own. The run compares what
// it injected with the kinds it built; this holds what it built to the
// page.
var modeKinds = map[string][]string{
	"inproc-postgres":   {Kill, Term, Pause, Partition, Cut, Latency, DBRestart},
	"rabbitmq-postgres": {Kill, Term, Pause, Partition, Cut, Latency, DBRestart, BrokerRestart},
	"rabbitmq-cluster":  {Kill, Term, Pause, Partition, Cut, Latency, DBRestart, BrokerRestart},
	"sqs-postgres":      {Kill, Term, Pause, Partition, Cut, Latency, DBRestart, Throttle, Duplicate},
	"sqs-dynamo":        {Kill, Term, Pause, Partition, Cut, Latency, Throttle, Duplicate},
}

// TestShortRunHoldsInEveryMode runs every mode for 30 seconds under
// faults of every kind it has (modeKinds, each injected at least once), drawn from a seed of the clock's (logged;
// NEMESIS_SEED repeats it), and fails on anything the checker finds: a
// ride lost, doubled or phantom, a total that does not add up, a process
// that did not recover, hung or crashed. The modes run at once, each with
// servers, proxies and processes of its own (they mostly wait on them);
// each has its subtest for the verdict.
func TestShortRunHoldsInEveryMode(t *testing.T) {
	needs.Server(t, "PostgreSQL, RabbitMQ nodes, fauxqs and dynalite of its own (the postgresql, rabbitmq-server and nodejs packages)")
	skiapi := filepath.Join(t.TempDir(), "skiapi")
	if out, err := exec.Command("go", "build", "-o", skiapi, "github.com/skidata/skidata/cmd/skiapi").CombinedOutput(); err != nil {
		t.Fatalf("go build skiapi: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NEMESIS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("NEMESIS_SEED=%q: %v", s, err)
		}
	}
	for _, m := range Modes {
		if modeKinds[m.Name] == nil {
			t.Fatalf("mode %s has no entry in modeKinds", m.Name)
		}
	}
	t.Logf("seed %d (NEMESIS_SEED=%d repeats its draws)", seed, seed)
	reports := make([]Report, len(Modes))
	progress := make([]lockedBuffer, len(Modes))
	took := make([]time.Duration, len(Modes))
	start := time.Now()
	var wg sync.WaitGroup
	for i, m := range Modes {
		c := DefaultConfig()
		c.Skiapi, c.Seed, c.Out = skiapi, seed, t.TempDir()
		c.RabbitMQScript = "../../../../scripts/rabbitmq-cluster.sh"
		c.Duration, c.Rate = 30*time.Second, 100
		c.FaultMin, c.FaultMax, c.FaultGap = 500*time.Millisecond, 2*time.Second, time.Second
		c.RestartDelay = 500 * time.Millisecond
		wg.Go(func() {
			reports[i] = RunMode(context.Background(), c, m, &progress[i])
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i, m := range Modes {
		t.Run(m.Name, func(t *testing.T) {
			var text bytes.Buffer
			reports[i].Print(&text)
			var wrong []string
			for _, k := range modeKinds[m.Name] {
				if reports[i].Faults[k] == 0 {
					wrong = append(wrong, k+" never injected")
				}
			}
			for k := range reports[i].Faults {
				if !slices.Contains(modeKinds[m.Name], k) {
					wrong = append(wrong, k+" injected, not a kind the mode has")
				}
			}
			if !reports[i].OK() || len(reports[i].NotInjected) > 0 || len(wrong) > 0 {
				t.Errorf("%s\n%s\nprogress:\n%s", strings.Join(wrong, "\n"), text.String(), progress[i].String())
				return
			}
			t.Logf("done after %s\n%s", took[i].Round(time.Second), text.String())
		})
	}
}
