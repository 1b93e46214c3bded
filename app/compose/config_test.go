package compose

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app"
)

func parse(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := DefaultConfig()
	c.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// TestConfigDefaultsAreMemoryOnLoopback8080: the API takes writes without
// authentication, so with nothing set only this machine reaches it.
func TestConfigDefaultsAreMemoryOnLoopback8080(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.Store != "memory" || c.Queue != "inproc" || c.Role != "all" {
		t.Errorf("defaults = %+v", c)
	}
}

func TestConfigEnvironmentSetsFlags(t *testing.T) {
	c, err := parse(t, nil, map[string]string{"SKI_BATCH_SIZE": "77", "SKI_BATCH_LINGER": "3ms", "SKI_LISTEN": ":9"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Persister.BatchSize != 77 || c.Persister.Linger != 3*time.Millisecond || c.Listen != ":9" {
		t.Errorf("from env: %+v", c)
	}
}

func TestConfigFlagWinsOverEnvironment(t *testing.T) {
	c, err := parse(t, []string{"--batch-size", "5"}, map[string]string{"SKI_BATCH_SIZE": "77"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Persister.BatchSize != 5 {
		t.Errorf("batch size = %d; want the flag's 5", c.Persister.BatchSize)
	}
}

func TestConfigRejectsWhatCannotWork(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"unknown store":       {[]string{"--store", "floppy"}, nil, `--store "floppy" is not one of`},
		"unknown role":        {[]string{"--role", "boss"}, nil, `--role "boss"`},
		"zero batch":          {[]string{"--batch-size", "0"}, nil, "--batch-size 0 is out of range: want 1 to"},
		"api role inproc":     {[]string{"--role", "api"}, nil, "--queue inproc works only with --role all"},
		"bad env value":       {nil, map[string]string{"SKI_BATCH_SIZE": "many"}, "SKI_BATCH_SIZE"},
		"unknown log format":  {[]string{"--log-format", "xml"}, nil, "--log-format"},
		"zero queue capacity": {[]string{"--queue-capacity", "0"}, nil, "--queue-capacity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, c.args, c.env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v; want one saying %q", err, c.want)
			}
		})
	}
}

func TestConfigAdmissionFlags(t *testing.T) {
	c, err := parse(t, []string{"--ingest-rate", "500", "--ingest-burst", "50", "--ingest-max-wait", "250ms", "--queue-soft-limit", "1000", "--queue-hard-limit", "5000",
		"--cache", "memory", "--cache-ttl", "2s", "--pprof-listen", "127.0.0.1:6060"}, map[string]string{"SKI_BREAKER_FAILURES": "9"})
	if err != nil {
		t.Fatal(err)
	}
	want := app.AdmissionConfig{Rate: 500, Burst: 50, MaxWait: 250 * time.Millisecond, SoftLimit: 1000, HardLimit: 5000}
	if c.Admission != want || c.Cache != "memory" || c.Query.CacheTTL != 2*time.Second || c.PprofListen != "127.0.0.1:6060" || c.Breaker.Failures != 9 {
		t.Errorf("parsed %+v", c)
	}
}

func TestConfigRejectsAdmissionSettingsThatCannotWork(t *testing.T) {
	for _, args := range [][]string{
		{"--queue-soft-limit", "10"}, // nothing to scale
		{"--ingest-rate", "5", "--queue-soft-limit", "10", "--queue-hard-limit", "10"}, // hard must exceed soft
		{"--ingest-rate", "-1"},
		{"--cache", "disk"},
		{"--pprof-listen", "0.0.0.0:6060"}, // profiles only on loopback
	} {
		if _, err := parse(t, args, nil); err == nil {
			t.Errorf("%v accepted; want an error", args)
		}
	}
}

func TestHTTPTimeoutsMustBePositiveAndLeaveTimeToAnswer(t *testing.T) {
	c := DefaultConfig()
	c.HTTP.HandlerTimeout = c.HTTP.WriteTimeout
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--http-handler-timeout") {
		t.Errorf("handler timeout equal to the write timeout: %v; want a refusal naming --http-handler-timeout", err)
	}
	c = DefaultConfig()
	c.HTTP.ReadTimeout = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--http-read-timeout 0s is out of range: want more than 0s") {
		t.Errorf("zero read timeout: %v; want a refusal", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

func TestNarrowIntegerFlagsRefuseWhatDoesNotFit(t *testing.T) {
	for _, args := range [][]string{
		{"--db-max-conns", "4294967296"},
		{"--breaker-failures", "-1"},
		{"--breaker-failures", "4294967296"},
	} {
		if _, err := parse(t, args, nil); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%v: err = %v; want out of range", args, err)
		}
	}
	c, err := parse(t, []string{"--db-max-conns", "7", "--breaker-failures", "3"}, nil)
	if err != nil || c.Postgres.MaxConns != 7 || c.Breaker.Failures != 3 {
		t.Errorf("in range: %v, %d, %d", err, c.Postgres.MaxConns, c.Breaker.Failures)
	}
}

// TestEveryNodeOfAnAMQPURLListIsCheckedAlone: a list of cluster nodes is
// accepted, and an '@' in the password of any node is refused (checked as
// one string, the first node's '@' would make every list look wrong).
func TestEveryNodeOfAnAMQPURLListIsCheckedAlone(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Queue = "rabbitmq"
	cfg.AMQP.URL = "amqp://guest:guest@127.0.0.1:5672/,amqp://guest:guest@127.0.0.1:5673/"
	if err := cfg.Validate(); err != nil {
		t.Errorf("a list of two nodes: %v", err)
	}
	cfg.AMQP.URL = "amqp://guest:guest@127.0.0.1:5672/,amqp://bob:a@b@127.0.0.1:5673/"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--amqp-url: the user or password holds an '@'") {
		t.Errorf("an '@' in the second node's password: %v; want it refused naming --amqp-url", err)
	}
}
