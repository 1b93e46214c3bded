package main

import (
	"strings"
	"testing"

	"github.com/skidata/skidata/test/apitest"
)

// The cases of issue 14 under "Passwords leak", and the other places a URL
// is printed: the config command, start-up errors, flag errors and usage.

// awkwardPasswords are the spellings that break a URL parser, so that a
// masker which parses first shows them in clear.
var awkwardPasswords = []string{"pa%zzss", "pa/ss", "pa#ss", "pa?ss", "pa@ss", "s3cret"}

func TestConfigMasksPasswordsThatBreakURLParsing(t *testing.T) {
	for _, pw := range awkwardPasswords {
		var out, errb strings.Builder
		code := run([]string{"config",
			"--amqp-url", "amqp://skidata:" + pw + "@mq.internal:5672/",
			"--database-url", "postgres://skidata:" + pw + "@db.internal:5432/ski",
			"--redis-url", "redis://:" + pw + "@cache.internal:6379/0"}, &out, &errb)
		if code != 0 {
			t.Fatalf("password %q: exit %d: %s", pw, code, errb.String())
		}
		if strings.Contains(out.String()+errb.String(), pw) {
			t.Errorf("password %q printed:\n%s%s", pw, out.String(), errb.String())
		}
		for _, want := range []string{"amqp-url = amqp://skidata:xxxxx@mq.internal:5672/", "database-url = postgres://skidata:xxxxx@db.internal:5432/ski", "redis-url = redis://:xxxxx@cache.internal:6379/0"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("password %q: missing %q in:\n%s", pw, want, out.String())
			}
		}
	}
}

func TestStartErrorsDoNotPrintPasswords(t *testing.T) {
	addr := apitest.ClosedAddr(t)
	cases := map[string][]string{
		"redis url that does not parse": {"--cache", "redis", "--redis-url", "redis://u:PW@cache.internal:notaport/0"},
		"redis url with a bad escape":   {"--cache", "redis", "--redis-url", "redis://u:PW%zz@cache.internal:6379/0"},
		"redis unreachable":             {"--cache", "redis", "--redis-url", "redis://u:PW@" + addr + "/0"},
		"amqp url that does not parse":  {"--queue", "rabbitmq", "--amqp-url", "amqp://u:PW@mq.internal:bad/"},
		"amqp unreachable":              {"--queue", "rabbitmq", "--amqp-url", "amqp://u:PW@" + addr + "/"},
		"postgres unreachable":          {"--store", "postgres", "--db-connect-timeout", "1s", "--database-url", "postgres://u:PW@" + addr + "/ski?sslmode=disable"},
	}
	for name, args := range cases {
		for _, pw := range []string{"s3cretpw", "pa/ss#?x"} {
			t.Run(name, func(t *testing.T) {
				for i := range args {
					args[i] = strings.ReplaceAll(args[i], "PW", pw)
				}
				var out, errb strings.Builder
				code := run(append([]string{"--listen", "127.0.0.1:0", "--log-level", "debug"}, args...), &out, &errb)
				if code == 0 {
					t.Fatalf("started; want a start error")
				}
				if strings.Contains(errb.String(), pw) || strings.Contains(out.String(), pw) {
					t.Errorf("password %q printed:\n%s", pw, errb.String())
				}
				for i := range args {
					args[i] = strings.ReplaceAll(args[i], pw, "PW")
				}
			})
		}
	}
}

func TestUsageAndFlagErrorsDoNotPrintPasswords(t *testing.T) {
	t.Setenv("SKI_AMQP_URL", "amqp://u:envs3cret@mq.internal:5672/")
	var out, errb strings.Builder
	run([]string{"help"}, &out, &errb)
	if strings.Contains(errb.String(), "guest:guest") {
		t.Errorf("usage shows the default URL's password:\n%s", errb.String())
	}
	errb.Reset()
	if code := run([]string{"--db-max-conns", "postgres://u:flags3cret@db/x"}, &out, &errb); code != 2 {
		t.Errorf("exit %d; want 2", code)
	}
	if strings.Contains(errb.String(), "flags3cret") || strings.Contains(errb.String(), "envs3cret") {
		t.Errorf("a flag error printed a password:\n%s", errb.String())
	}
}
