// Package amqptest gives tests a RabbitMQ to talk to: the machine's broker
// (make test starts it when it is stopped) or the one
// SKIDATA_TEST_AMQP_URL names, and queues no other test or run uses,
// deleted when the test ends. Under -short (test/needs) every test that
// needs the broker skips, naming it; otherwise an unreachable broker fails
// the test.
package amqptest

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/needs"
)

// EnvURL names a broker to use instead of the machine's own.
const EnvURL = "SKIDATA_TEST_AMQP_URL"

// URL is the broker the tests run against. It is how a test says it needs
// RabbitMQ: under -short it skips t, naming the server.
func URL(t testing.TB) string {
	t.Helper()
	return needs.URL(t, "RabbitMQ", EnvURL, "amqp://guest:guest@127.0.0.1:5672/")
}

var seq atomic.Int64

// Prefix is a queue-name prefix no other test in any run uses.
func Prefix(t testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("skitest.%s.%d.%d", name, time.Now().UnixNano(), seq.Add(1))
}

// Open opens a broker on cfg (the test broker's URL and a fresh prefix
// when they are empty), which declares its queues, and deletes them when
// the test ends. An unreachable broker fails the test, naming it and how
// to start it.
func Open(t testing.TB, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	needs.Server(t, "RabbitMQ")
	if cfg.URL == "" {
		cfg.URL = URL(t)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = Prefix(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test (start it with `rabbitmq-server -detached`, or set %s): %v", EnvURL, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.DeleteTopology(ctx); err != nil {
			t.Errorf("delete test queues %s.*: %v", cfg.Prefix, err)
		}
		_ = b.Disconnect()
	})
	return b
}

// Ctl runs rabbitmqctl on the test broker's machine, failing the test with
// its output.
func Ctl(t testing.TB, args ...string) {
	t.Helper()
	needs.Server(t, "RabbitMQ (rabbitmqctl)")
	if out, err := exec.Command("rabbitmqctl", append([]string{"-q"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("rabbitmqctl %s (run as root on the broker's machine): %v: %s", args[0], err, out)
	}
}

// User creates a broker user with the password and every permission on
// the test URL's vhost, and deletes it (closing its connections) when the
// test ends. It returns the user and the test URL with that user and no
// password. A broker on another machine skips the test: rabbitmqctl
// manages only this machine's.
func User(t testing.TB, password string) (user, rawURL string) {
	t.Helper()
	needs.Server(t, "RabbitMQ (rabbitmqctl)")
	u, err := url.Parse(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" {
		t.Skipf("the broker at %s is not this machine's: rabbitmqctl cannot manage its users", h)
	}
	vhost := strings.TrimPrefix(u.Path, "/")
	if vhost == "" {
		vhost = "/"
	}
	user = fmt.Sprintf("skitest-user-%d-%d", time.Now().UnixNano(), seq.Add(1))
	Ctl(t, "add_user", user, password)
	t.Cleanup(func() {
		if out, err := exec.Command("rabbitmqctl", "-q", "delete_user", user).CombinedOutput(); err != nil {
			t.Errorf("rabbitmqctl delete_user %s: %v: %s", user, err, out)
		}
	})
	Ctl(t, "set_permissions", "-p", vhost, user, ".*", ".*", ".*")
	u.User = url.User(user)
	return user, u.String()
}
