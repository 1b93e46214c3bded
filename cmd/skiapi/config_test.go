package main

import (
	"strings"
	"testing"
)

func TestConfigCommandPrintsEffectiveSettingsWithSourcesAndMaskedSecrets(t *testing.T) {
	t.Setenv("SKI_ROLE", "consumer")
	var out, errb strings.Builder
	code := run([]string{"config", "--profile", "ec2", "--amqp-url", "amqp://skidata:hunter2@mq:5672/"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Errorf("the password was printed:\n%s", out.String())
	}
	for _, want := range []string{
		"amqp-url = amqp://skidata:xxxxx@mq:5672/ (flag)\n",
		"role = consumer (env SKI_ROLE)\n",
		"store = dynamo-sharded (profile ec2)\n",
		"batch-size = 500 (default)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}

func TestConfigCommandReportsAnInvalidSetting(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"config", "--store", "nope"}, &out, &errb); code != 2 {
		t.Errorf("exit %d; want 2", code)
	}
	if !strings.Contains(errb.String(), `"nope"`) {
		t.Errorf("stderr %q does not name the bad value", errb.String())
	}
}
