package rabbitmq_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/queuetest"
)

// rotatingSecret stands for the secret store: it holds the password the
// broker user has now, and counts the reads.
type rotatingSecret struct {
	password atomic.Value // string
	reads    atomic.Int64
}

func (s *rotatingSecret) credentials(context.Context) (string, string, error) {
	s.reads.Add(1)
	return "", s.password.Load().(string), nil
}

// TestPasswordRotatedAtTheBrokerIsReadAgainOnReconnect: the broker user's
// password changes, its connections are closed, and the publisher and the
// consumer log in again with the password read again from their source,
// without a restart, and lose no confirmed ride. The password appears in
// no log line.
func TestPasswordRotatedAtTheBrokerIsReadAgainOnReconnect(t *testing.T) {
	const oldPassword, newPassword = "old-Pa55word-f1d2", "new-Pa55word-9c8b"
	user, rawURL := amqptest.User(t, oldPassword)
	secret := &rotatingSecret{}
	secret.password.Store(oldPassword)
	var logs logBuffer
	prefix := amqptest.Prefix(t)
	cfg := rabbitmq.Config{
		URL: rawURL, Prefix: prefix, Shards: 2, ConnectionName: prefix, ReconnectMaxInterval: 300 * time.Millisecond,
		Credentials: secret.credentials, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	b := openBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := &collector{acked: map[domain.LiftRide]int{}}
	go got.run(ctx, t, b, ch)

	rides := queuetest.Rides(400, 1)
	// publish offers a ride until the broker confirms it, as a client
	// retrying a 503 would.
	publish := func(r domain.LiftRide) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := b.Publish(ctx, []domain.LiftRide{r})
			if err == nil {
				return
			}
			if !errors.Is(err, domain.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("Publish: %v", err)
			}
			time.Sleep(10 * time.Millisecond) // client back-off pacing
		}
	}
	for _, r := range rides[:200] {
		publish(r)
	}
	readsBefore := secret.reads.Load()

	amqptest.Ctl(t, "change_password", user, newPassword)
	secret.password.Store(newPassword)
	amqptest.Ctl(t, "close_all_user_connections", user, "skidata rotation test")

	for _, r := range rides[200:] {
		publish(r)
	}
	waitFor(t, 30*time.Second, "every ride is delivered and acked", func() bool { return got.count() == len(rides) })
	if secret.reads.Load() == readsBefore {
		t.Error("the password was not read again after the broker closed the connections")
	}
	for _, p := range []string{oldPassword, newPassword} {
		if strings.Contains(logs.String(), p) {
			t.Errorf("the logs hold a password:\n%s", logs.String())
		}
	}
}

// TestCredentialsErrorFailsOpen: a source that cannot give the password
// fails Open with its reason and the URL, not the password.
func TestCredentialsErrorFailsOpen(t *testing.T) {
	cfg := rabbitmq.Config{
		URL: amqptest.URL(t), Prefix: amqptest.Prefix(t),
		Credentials: func(context.Context) (string, string, error) {
			return "", "", errors.New("secret not found")
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, cfg)
	if err == nil {
		_ = b.Disconnect()
		t.Fatal("Open succeeded without credentials")
	}
	if !strings.Contains(err.Error(), "secret not found") || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("Open: %v; want the source's reason", err)
	}
}
