package rabbitmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/proxytest"
	"github.com/skidata/skidata/test/queuetest"
)

// logBuffer collects a broker's log lines (text format) for a test.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// connected lists the "rabbitmq connected" lines of role, as the masked URL
// each reached, oldest first.
func (l *logBuffer) connected(role string) []string {
	var out []string
	for line := range strings.SplitSeq(l.String(), "\n") {
		if !strings.Contains(line, `msg="rabbitmq connected"`) || !strings.Contains(line, " role="+role+" ") {
			continue
		}
		_, rest, _ := strings.Cut(line, " url=")
		u, _, _ := strings.Cut(rest, " ")
		out = append(out, u)
	}
	return out
}

// TestOpenSkipsAnUnreachableFirstURL: with the first URL of the list
// unreachable (nothing listens on port 1), Open connects to the second,
// both the publishing and the consuming connection use it, a ride goes
// through, and the log names the node skipped and the node reached with
// their passwords masked.
func TestOpenSkipsAnUnreachableFirstURL(t *testing.T) {
	logs := &logBuffer{}
	dead := "amqp://guest:guest@127.0.0.1:1/"
	live := amqptest.URL(t)
	b := openBroker(t, rabbitmq.Config{URL: dead + "," + live, Logger: logs.logger()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Publish(ctx, queuetest.Rides(1, 1)); err != nil {
		t.Fatalf("Publish through the second URL: %v", err)
	}
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatalf("Deliveries through the second URL: %v", err)
	}
	d := take(t, ctx, ch, 1)[0]
	if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	got := logs.String()
	want := rabbitmq.RedactURLs(live)
	for _, role := range []string{"publish", "consume"} {
		if c := logs.connected(role); len(c) != 1 || c[0] != want {
			t.Errorf("%s connections logged %v; want one, to %s\n%s", role, c, want, got)
		}
	}
	if !strings.Contains(got, "rabbitmq node unreachable") || !strings.Contains(got, "url=amqp://guest:xxxxx@127.0.0.1:1/") {
		t.Errorf("the log does not name the unreachable node, masked:\n%s", got)
	}
	if strings.Contains(got, "guest:guest") {
		t.Errorf("the log shows a password:\n%s", got)
	}
}

// TestRedialTakesTheNextURLRoundRobin: two URLs reach the same broker
// through two proxies. Cutting the node in use moves both connections to
// the other; cutting that one (the first restored) moves them back to the
// first: a redial starts after the node that failed, and wraps around.
func TestRedialTakesTheNextURLRoundRobin(t *testing.T) {
	live, err := url.Parse(amqptest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxies := []*proxytest.Proxy{proxytest.Start(t, live.Host), proxytest.Start(t, live.Host)}
	urls := make([]string, len(proxies))
	for i, p := range proxies {
		u := *live
		u.Host = p.Addr()
		urls[i] = u.String()
	}
	logs := &logBuffer{}
	b := openBroker(t, rabbitmq.Config{URL: strings.Join(urls, ","), Logger: logs.logger(), ReconnectMaxInterval: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}

	want := []string{rabbitmq.RedactURLs(urls[0])}
	step := func(cut, restore int) {
		t.Helper()
		proxies[restore].Restore()
		proxies[cut].Cut()
		want = append(want, rabbitmq.RedactURLs(urls[restore]))
		for _, role := range []string{"publish", "consume"} {
			waitFor(t, 20*time.Second, fmt.Sprintf("the %s connection reconnects to %s", role, want[len(want)-1]), func() bool {
				return len(logs.connected(role)) >= len(want)
			})
			if got := logs.connected(role); !slices.Equal(got, want) {
				t.Fatalf("%s connections went to %v; want %v\n%s", role, got, want, logs)
			}
		}
		// A ride goes through the node now in use.
		var perr error
		waitFor(t, 20*time.Second, "a publish succeeds", func() bool {
			perr = b.Publish(ctx, queuetest.Rides(1, 1))
			return perr == nil
		})
		d := take(t, ctx, ch, 1)[0]
		if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	step(0, 1)
	step(1, 0)
}

// TestParseURLs: a list is split on commas (spaces around them ignored),
// each URL checked as the client library will; errors mask passwords.
func TestParseURLs(t *testing.T) {
	got, err := rabbitmq.ParseURLs("amqp://u:p@a:5672/, amqps://u:p@b:5671/ ,amqp://c/")
	if err != nil || !slices.Equal(got, []string{"amqp://u:p@a:5672/", "amqps://u:p@b:5671/", "amqp://c/"}) {
		t.Errorf("ParseURLs = %q, %v", got, err)
	}
	for _, bad := range []string{
		"amqp://u:s3cret@a/,",
		"amqp://u:s3cret@a/,,amqp://u:s3cret@b/",
		"amqp://u:s3cret@a/,http://u:s3cret@b/",
		"amqp://u:s3cret@a:notaport/",
	} {
		_, err := rabbitmq.ParseURLs(bad)
		if err == nil {
			t.Errorf("ParseURLs(%q) accepted it", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURLs(%q) error shows the password: %v", bad, err)
		}
		if _, oerr := rabbitmq.Open(context.Background(), rabbitmq.Config{URL: bad}); oerr == nil {
			t.Errorf("Open(%q) accepted it", bad)
		}
	}
}

func TestRedactURLsMasksEach(t *testing.T) {
	got := rabbitmq.RedactURLs("amqp://u:p1@a:5672/,amqp://u:p2@b:5672/")
	if want := "amqp://u:xxxxx@a:5672/, amqp://u:xxxxx@b:5672/"; got != want {
		t.Errorf("RedactURLs = %q; want %q", got, want)
	}
}
