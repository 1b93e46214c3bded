package awssecrets_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/awssecrets"
	"github.com/skidata/skidata/test/fakesecrets"
)

const arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:skidata/amqp-AbCdEf"

func open(t *testing.T, fake *fakesecrets.Server, id string) *awssecrets.Secret {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := awssecrets.New(ctx, awssecrets.Config{SecretID: id, Endpoint: fake.URL})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestLoginReadsTheCurrentValueEveryTime(t *testing.T) {
	fake := fakesecrets.New(t)
	fake.Set(arn, "first-pass")
	s := open(t, fake, arn)
	ctx := context.Background()
	l, err := s.Login(ctx)
	if err != nil || l != (awssecrets.Login{Password: "first-pass"}) {
		t.Fatalf("Login = %v, %v; want the plain password", l, err)
	}
	fake.Set(arn, `{"username":"skidata","password":"second-pass"}`)
	l, err = s.Login(ctx)
	if err != nil || l != (awssecrets.Login{Username: "skidata", Password: "second-pass"}) {
		t.Fatalf("after rotation Login = %v, %v; want the JSON's user and password", l, err)
	}
	if got := fake.Targets(); len(got) != 2 || got[0] != "secretsmanager.GetSecretValue" {
		t.Errorf("requests %v; want two GetSecretValue", got)
	}
}

func TestLoginNamesAMissingSecret(t *testing.T) {
	fake := fakesecrets.New(t)
	s := open(t, fake, arn)
	_, err := s.Login(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") || !strings.Contains(err.Error(), arn) {
		t.Errorf("Login of a missing secret: %v; want ResourceNotFoundException naming it", err)
	}
}

func TestNewNeedsARegionForAName(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	_, err := awssecrets.New(context.Background(), awssecrets.Config{SecretID: "skidata/amqp"})
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Errorf("New with a bare name and no region: %v; want an error saying to set AWS_REGION", err)
	}
	_, err = awssecrets.New(context.Background(), awssecrets.Config{SecretID: "arn:aws:dynamodb:eu-central-1:123456789012:table/x"})
	if err == nil || !strings.Contains(err.Error(), "not of a Secrets Manager secret") {
		t.Errorf("New with a table's ARN: %v; want it refused", err)
	}
}

func TestParseLogin(t *testing.T) {
	for _, c := range []struct {
		in   string
		want awssecrets.Login
		err  string
	}{
		{in: "p@ss word ", want: awssecrets.Login{Password: "p@ss word "}},
		{in: `{"password":"x"}`, want: awssecrets.Login{Password: "x"}},
		{in: ` {"username":"u","password":"x","host":"h"}`, want: awssecrets.Login{Username: "u", Password: "x"}},
		{in: "", err: "empty"},
		{in: `{"username":"u"}`, err: `no "password"`},
		{in: `{"password":"sekrit"`, err: "not a JSON object"},
	} {
		got, err := awssecrets.ParseLogin(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseLogin(%q) error %v; want one saying %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseLogin(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case err != nil && strings.Contains(err.Error(), "sekrit"):
			t.Errorf("ParseLogin's error quotes the value: %v", err)
		}
	}
}

func TestLoginPrintsMasked(t *testing.T) {
	l := awssecrets.Login{Username: "u", Password: "hunter2"}
	for _, s := range []string{fmt.Sprint(l), fmt.Sprintf("%v %+v %#v %s", l, l, l, l)} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("a printed Login shows the password: %s", s)
		}
	}
}
