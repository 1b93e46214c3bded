package rabbitmq_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/queuetest"
)

// openPeer opens another process's view of queues an openBroker owns (it
// does not delete them).
func openPeer(t *testing.T, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	cfg.URL = amqptest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test: %v", err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = b.Disconnect()
	})
	return b
}

// collector consumes deliveries, acking in batches of what is ready (as the
// persister does), and records every ride it acked.
type collector struct {
	mu    sync.Mutex
	acked map[domain.LiftRide]int
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

func (c *collector) has(r domain.LiftRide) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked[r] > 0
}

// run acks until ch closes or ctx ends.
func (c *collector) run(ctx context.Context, t *testing.T, sub ports.Subscriber, ch <-chan ports.Delivery) {
	for {
		var batch []ports.Delivery
		select {
		case d, ok := <-ch:
			if !ok {
				return
			}
			batch = append(batch, d)
		case <-ctx.Done():
			return
		}
	more:
		for len(batch) < 100 {
			select {
			case d, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		if err := sub.Ack(ctx, batch); err != nil {
			t.Logf("ack of %d rides failed (they will be redelivered): %v", len(batch), err)
			continue
		}
		c.mu.Lock()
		for _, d := range batch {
			for _, r := range d.Rides {
				c.acked[r]++
			}
		}
		c.mu.Unlock()
	}
}

// waitFor is poll.Until for a condition with nothing more to say than
// whether it holds yet.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, d, "waiting until "+what, func() string {
		if cond() {
			return ""
		}
		return "not so"
	})
}

// TestConsumerKilledMidBatchLosesNothing: a consumer that dies holding
// unacked rides loses none of them: a new consumer gets them, and in the end
// the rides acked are exactly the rides published.
func TestConsumerKilledMidBatchLosesNothing(t *testing.T) {
	cfg := rabbitmq.Config{Prefix: amqptest.Prefix(t), Shards: 2, Prefetch: 100}
	pub := openBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rides := queuetest.Rides(500, 1)
	for _, r := range rides {
		if err := pub.Publish(ctx, []domain.LiftRide{r}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}

	// Consumer A takes 120 rides, acks the first 60 and dies holding 60.
	a := openPeer(t, cfg)
	chA, err := a.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first, held []ports.Delivery
	for len(first)+len(held) < 120 {
		select {
		case d := <-chA:
			if len(first) < 60 {
				first = append(first, d)
			} else {
				held = append(held, d)
			}
		case <-ctx.Done():
			t.Fatal("consumer A got fewer than 120 rides before the deadline")
		}
	}
	if err := a.Ack(ctx, first); err != nil {
		t.Fatalf("Ack by A: %v", err)
	}
	a.KillConsumerConnection()

	// Consumer B finishes the job.
	got := &collector{acked: map[domain.LiftRide]int{}}
	for _, d := range first {
		for _, r := range d.Rides {
			got.acked[r]++
		}
	}
	b := openPeer(t, cfg)
	chB, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go got.run(ctx, t, b, chB)
	waitFor(t, 30*time.Second, "every published ride is acked", func() bool { return got.count() >= len(rides) })

	published := map[domain.LiftRide]bool{}
	for _, r := range rides {
		published[r] = true
		if !got.has(r) {
			t.Errorf("ride %s was published but never acked", r.Key())
		}
	}
	got.mu.Lock()
	for r := range got.acked {
		if !published[r] {
			t.Errorf("ride %s was acked but never published", r.Key())
		}
	}
	got.mu.Unlock()
	for _, d := range held {
		for _, r := range d.Rides {
			if !got.has(r) {
				t.Errorf("ride %s held unacked by the dead consumer was not redelivered", r.Key())
			}
		}
	}
	waitFor(t, 10*time.Second, "the queues are empty", func() bool {
		d, err := b.Depth(ctx)
		return err == nil && d == ports.QueueDepth{}
	})
}

// closeConnections closes, through rabbitmqctl, every broker connection
// whose client-provided name starts with prefix, as a broker restart or a
// network cut would. Only this test's connections are closed, so other
// users of the shared broker are not disturbed.
func closeConnections(t *testing.T, prefix string) int {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_connections", "--no-table-headers", "pid", "client_properties").Output()
	if err != nil {
		t.Fatalf("rabbitmqctl list_connections (needed to cut the broker's connections; run as root on the broker's machine): %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		pid, props, ok := strings.Cut(line, "\t")
		if !ok || !strings.Contains(props, `"connection_name","`+prefix) {
			continue
		}
		if out, err := exec.Command("rabbitmqctl", "-q", "close_connection", pid, "skidata failure test").CombinedOutput(); err != nil {
			t.Fatalf("rabbitmqctl close_connection %s: %v: %s", pid, err, out)
		}
		n++
	}
	return n
}

// TestBrokerClosesConnectionsUnderLoad: the broker drops every connection
// of the publisher and the consumer while rides are being published.
// Publishing resumes by itself, failures in between are ErrUnavailable, and
// every ride whose Publish returned nil is delivered.
func TestBrokerClosesConnectionsUnderLoad(t *testing.T) {
	prefix := amqptest.Prefix(t)
	cfg := rabbitmq.Config{Prefix: prefix, Shards: 2, ConnectionName: prefix, ReconnectMaxInterval: 500 * time.Millisecond}
	pub := openBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sub := openPeer(t, cfg)
	ch, err := sub.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := &collector{acked: map[domain.LiftRide]int{}}
	go got.run(ctx, t, sub, ch)

	const total, workers = 30000, 4 // an upper bound; the load stops once it has shown recovery
	rides := queuetest.Rides(total, 1)
	var (
		mu            sync.Mutex
		confirmed     []domain.LiftRide
		failed        int
		killed        atomic.Bool
		afterKill     atomic.Int64
		next          atomic.Int64
		wg            sync.WaitGroup
		loadDeadline  = time.Now().Add(30 * time.Second)
		killThreshold = int64(500)
		resumed       = int64(300) // confirmed publishes after the cut that end the load
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(loadDeadline) && afterKill.Load() < resumed {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				r := rides[i]
				// A refused ride is offered again, as a client retrying a
				// 503 would, so that fast refusals while the broker is away
				// do not use up the ride budget before recovery shows.
				for time.Now().Before(loadDeadline) {
					wasKilled := killed.Load()
					err := pub.Publish(ctx, []domain.LiftRide{r})
					mu.Lock()
					switch {
					case err == nil:
						confirmed = append(confirmed, r)
						if wasKilled {
							afterKill.Add(1)
						}
					case errors.Is(err, domain.ErrUnavailable):
						failed++
					default:
						t.Errorf("Publish failed with %v; want nil or ErrUnavailable", err)
					}
					mu.Unlock()
					if err == nil || !errors.Is(err, domain.ErrUnavailable) {
						break
					}
					time.Sleep(5 * time.Millisecond) // client back-off pacing, not synchronisation
				}
			}
		}()
	}
	waitFor(t, 20*time.Second, "500 rides are published", func() bool { return next.Load() >= killThreshold })
	if n := closeConnections(t, prefix); n < 2 {
		t.Fatalf("closed %d connections named %s*; want the publisher's and the consumer's", n, prefix)
	}
	killed.Store(true)
	wg.Wait()

	mu.Lock()
	t.Logf("%d rides confirmed, %d refused as unavailable, %d confirmed after the connections were closed", len(confirmed), failed, afterKill.Load())
	ok := slicesClone(confirmed)
	mu.Unlock()
	if afterKill.Load() == 0 {
		t.Fatal("no publish succeeded after the broker closed the connections: publishing did not resume")
	}
	waitFor(t, 30*time.Second, "every confirmed ride is delivered and acked", func() bool {
		for _, r := range ok {
			if !got.has(r) {
				return false
			}
		}
		return true
	})
}

func slicesClone(s []domain.LiftRide) []domain.LiftRide { return append([]domain.LiftRide(nil), s...) }
