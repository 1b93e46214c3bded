package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/fakesecrets"
)

const amqpSecretARN = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:skidata/amqp-AbCdEf"

// amqpURLWithoutPassword is the test broker's URL with its password
// removed: only the secret can log in.
func amqpURLWithoutPassword(t *testing.T) (rawURL, password string) {
	t.Helper()
	u, err := url.Parse(amqptest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	password, _ = u.User.Password()
	u.User = url.User(u.User.Username())
	return u.String(), password
}

// fakeSecretsManager points the AWS SDK at a local Secrets Manager.
func fakeSecretsManager(t *testing.T) *fakesecrets.Server {
	fake := fakesecrets.New(t)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", fake.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	return fake
}

// TestAMQPPasswordComesFromSecretsManager: with --amqp-password-secret a
// command logs in to RabbitMQ with the secret's password (plain, or JSON
// as Secrets Manager stores a login), the URL holding none; a wrong one
// is the broker's refusal, and no output shows the secret's value.
func TestAMQPPasswordComesFromSecretsManager(t *testing.T) {
	fake := fakeSecretsManager(t)
	rawURL, password := amqpURLWithoutPassword(t)
	prefix := fmt.Sprintf("skitest.cmd.secret.%d", time.Now().UnixNano())
	flags := []string{"dlq", "list", "--queue", "rabbitmq", "--amqp-url", rawURL, "--amqp-prefix", prefix, "--amqp-password-secret", amqpSecretARN}
	// Declared as the commands declare them, and deleted when the test ends.
	amqptest.Open(t, rabbitmq.Config{URL: amqptest.URL(t), Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity})

	for _, value := range []string{password, `{"username":"` + strings.SplitN(strings.TrimPrefix(rawURL, "amqp://"), "@", 2)[0] + `","password":"` + password + `"}`} {
		fake.Set(amqpSecretARN, value)
		reads := fake.Reads(amqpSecretARN)
		if code, out, errOut := skiapi(flags...); code != 0 {
			t.Fatalf("secret %s: dlq list exit %d: %s%s", strings.ReplaceAll(value, password, "xxxxx"), code, out, errOut)
		}
		if fake.Reads(amqpSecretARN) == reads {
			t.Fatal("dlq list did not read the secret")
		}
	}

	const wrong = "not-the-Pa55word"
	fake.Set(amqpSecretARN, wrong)
	code, out, errOut := skiapi(flags...)
	if code == 0 {
		t.Fatal("dlq list logged in with a wrong password from the secret")
	}
	if !strings.Contains(errOut, "username or password not allowed") {
		t.Errorf("wrong password: %s; want the broker's refusal", errOut)
	}
	if strings.Contains(out+errOut, wrong) {
		t.Errorf("the output shows the secret's value:\n%s%s", out, errOut)
	}

	code, out, errOut = skiapi("config", "--amqp-url", rawURL, "--amqp-password-secret", amqpSecretARN)
	if code != 0 || !strings.Contains(out, "amqp-password-secret = "+amqpSecretARN) || strings.Contains(out+errOut, wrong) {
		t.Errorf("config: exit %d, want the secret's ARN and never its value:\n%s%s", code, out, errOut)
	}
}

// TestAMQPPasswordSecretMissing: a secret that does not exist fails the
// command with Secrets Manager's reason and the secret's name.
func TestAMQPPasswordSecretMissing(t *testing.T) {
	fakeSecretsManager(t)
	rawURL, _ := amqpURLWithoutPassword(t)
	code, _, errOut := skiapi("dlq", "list", "--queue", "rabbitmq", "--amqp-url", rawURL, "--amqp-password-secret", amqpSecretARN)
	if code == 0 || !strings.Contains(errOut, "ResourceNotFoundException") || !strings.Contains(errOut, amqpSecretARN) {
		t.Errorf("exit %d: %s; want a failure naming the secret and ResourceNotFoundException", code, errOut)
	}
}
