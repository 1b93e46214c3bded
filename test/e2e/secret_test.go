package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/fakesecrets"
)

// TestBrokerPasswordRotatedWhileServing: the service logs in to RabbitMQ
// with the password in a Secrets Manager secret (a local stand-in), the URL
// holding none. The broker user's password changes, the secret with it,
// and the broker closes the user's connections: the service reads the
// secret again, reconnects, and every ride accepted before and after is
// stored.
func TestBrokerPasswordRotatedWhileServing(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:skidata/rabbitmq-e2e"
	fake := fakesecrets.New(t)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", fake.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	user, rawURL := amqptest.User(t, "first-Pa55word")
	fake.Set(arn, fmt.Sprintf(`{"username":%q,"password":"first-Pa55word"}`, user))

	cfg := rabbitConfig(t, "rotation")
	cfg.AMQP.URL = rawURL
	cfg.AMQPPasswordSecret = arn
	base := apitest.Start(t, cfg)

	const resort, day, perPhase = 4, 7, 30
	ctx := context.Background()
	for i := range perPhase {
		if err := postWithRetry(ctx, base, resort, day, int32(5000+i)); err != nil {
			t.Fatal(err)
		}
	}
	readsBefore := fake.Reads(arn)

	amqptest.Ctl(t, "change_password", user, "second-Pa55word")
	fake.Set(arn, fmt.Sprintf(`{"username":%q,"password":"second-Pa55word"}`, user))
	amqptest.Ctl(t, "close_all_user_connections", user, "skidata rotation test")

	for i := range perPhase {
		if err := postWithRetry(ctx, base, resort, day, int32(5000+perPhase+i)); err != nil {
			t.Fatal(err)
		}
	}
	waitDrained(t, base)
	skiers := resortSkiers(t, base, resort, 2024, day)
	if !strings.Contains(string(skiers.Body), fmt.Sprintf(`"numSkiers":%d`, 2*perPhase)) {
		t.Errorf("unique skiers: %s; want %d, every ride accepted before and after the rotation", skiers.Body, 2*perPhase)
	}
	if fake.Reads(arn) == readsBefore {
		t.Error("the service did not read the secret again after the broker refused the old password")
	}
}
