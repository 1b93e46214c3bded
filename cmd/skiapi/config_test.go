package main

import (
	"flag"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
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
		"queue = sqs (profile ec2)\n", // the stack's default queue
		"listen = :8080 (profile ec2)\n",
		"batch-size = 500 (default)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}

// TestConfigCommandShowsTheLoopbackListenByDefault: with no profile the
// API is reachable from this machine only, and `skiapi config` says so.
func TestConfigCommandShowsTheLoopbackListenByDefault(t *testing.T) {
	for _, v := range []string{"SKI_PROFILE", "SKI_LISTEN"} {
		t.Setenv(v, "") // restored after the test; absent during it
		os.Unsetenv(v)
	}
	var out, errb strings.Builder
	if code := run([]string{"config"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "listen = 127.0.0.1:8080 (default)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("missing %q in:\n%s", want, out.String())
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

// TestEveryNumericSettingOutsideWhatCanWorkIsRefused: every numeric flag
// has values that cannot work (NaN, negative, zero where zero means
// nothing, more than a message or a write can hold); each is refused as
// one usage line (exit 2) naming the flag as --flag and the range allowed,
// rather than replaced by a default that `skiapi config` would not show.
func TestEveryNumericSettingOutsideWhatCanWorkIsRefused(t *testing.T) {
	bad := map[string][]string{
		"queue-capacity":           {"0", "-1", "2147483648"},
		"amqp-shards":              {"0", "-1", "1025"},
		"amqp-prefetch":            {"0", "-1", "65536"},
		"amqp-delivery-limit":      {"0", "-2", "2147483648"},
		"amqp-publish-channels":    {"0", "-1", "1025"},
		"amqp-publish-timeout":     {"0s", "-1s"},
		"publish-batch":            {"0", "-1", "4097"},
		"publish-linger":           {"-1ms"},
		"publish-linger-gap":       {"-1ms"},
		"batch-size":               {"0", "-1", "100001", "99999999999"},
		"batch-linger":             {"0s", "-1ms"},
		"batch-retry-for":          {"-1s"},
		"persist-writers":          {"0", "-1", "1025"},
		"shutdown-timeout":         {"0s", "-1s"},
		"http-shutdown-timeout":    {"0s", "-1s"},
		"http-read-timeout":        {"0s", "-1s"},
		"http-write-timeout":       {"0s", "-1s"},
		"http-handler-timeout":     {"0s", "-1s"},
		"db-max-conns":             {"-1", "262144"},
		"db-statement-timeout":     {"-1s", "500us", "600h"},
		"db-connect-timeout":       {"-1s"},
		"dynamo-write-concurrency": {"0", "-1", "1025"},
		"sqs-pollers":              {"0", "-1", "1025"},
		"sqs-visibility-timeout":   {"0s", "-1s", "1500ms", "12h0m1s"},
		"sqs-max-receive-count":    {"0", "-1", "1001"},
		"ingest-rate":              {"NaN", "-1", "Inf", "-Inf", "1e10"},
		"ingest-burst":             {"-1", "2147483648"},
		"client-rate":              {"NaN", "-1", "Inf", "1e10"},
		"client-burst":             {"-1", "2147483648"},
		"queue-soft-limit":         {"-1"},
		"queue-hard-limit":         {"-1"},
		"breaker-failures":         {}, // 0 (no breaker) to 4294967295 all work; the flag refuses the rest
		"breaker-open-for":         {"0s", "-1s"},
		"ingest-max-wait":          {"-1ms"},
		"cache-ttl":                {"0s", "-1s"},
		"cache-size":               {"0", "-1", "2147483648"},
	}
	// The table covers every flag whose default is a number or a duration.
	fs := newFlagSet(io.Discard)
	cfg := compose.DefaultConfig()
	cfg.RegisterFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		_, numErr := strconv.ParseFloat(f.DefValue, 64)
		_, durErr := time.ParseDuration(f.DefValue)
		if _, listed := bad[f.Name]; (numErr == nil || durErr == nil) && !listed {
			t.Errorf("--%s is numeric but not in the table", f.Name)
		}
	})
	for name, values := range bad {
		for _, v := range values {
			code, out, errOut := skiapi("config", "--"+name, v)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "skiapi: --"+name+" ") ||
				!strings.Contains(errOut, "out of range: want ") {
				t.Errorf("config --%s %s: exit %d, stderr %q; want 2 and one line naming --%s and its range", name, v, code, errOut, name)
			}
			if code == 0 && !strings.Contains(out, name+" = ") {
				t.Errorf("config --%s %s does not show the value", name, v)
			}
		}
	}
	// The service refuses them too, before it serves.
	if code, _, errOut := skiapi("--listen", "127.0.0.1:0", "--batch-size=99999999999"); code != 2 || !strings.Contains(errOut, "--batch-size 99999999999 is out of range: want 1 to 100000") {
		t.Errorf("skiapi --batch-size=99999999999: exit %d, stderr %q; want 2 and the range", code, errOut)
	}
	// What config shows is what is in effect: a value allowed is not
	// replaced by a default.
	_, out, _ := skiapi("config", "--amqp-shards", "3", "--amqp-publish-timeout", "2s", "--amqp-delivery-limit", "-1")
	for _, want := range []string{"amqp-shards = 3 (flag)", "amqp-publish-timeout = 2s (flag)", "amqp-delivery-limit = -1 (flag)"} {
		if !strings.Contains(out, want) {
			t.Errorf("config does not show %q:\n%s", want, out)
		}
	}
}
