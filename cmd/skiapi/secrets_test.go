package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/skidata/skidata/adapters/redact"
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
		// An '@' in a password is refused (it must be percent-encoded);
		// the configuration is printed all the same.
		if want := map[bool]int{false: 0, true: 2}[strings.Contains(pw, "@")]; code != want {
			t.Fatalf("password %q: exit %d; want %d: %s", pw, code, want, errb.String())
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

// TestAnAtSignInAURLPasswordIsRefusedBeforeConnecting: with an '@' in the
// password, the part after it would be read as the host and reach the
// resolver and its error ("lookup BBBsecret@127.0.0.1: no such host").
// Every command refuses it at once, exit 2, naming the flag and the fix.
func TestAnAtSignInAURLPasswordIsRefusedBeforeConnecting(t *testing.T) {
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--database-url", []string{"migrate", "--store", "postgres", "--database-url", "postgres://bob:AAA@BBBsecret@127.0.0.1:1/prod"}},
		{"--database-url", []string{"--listen", "127.0.0.1:0", "--store", "postgres", "--database-url", "postgres://bob:AAA@BBBsecret@127.0.0.1:1/prod"}},
		{"--amqp-url", []string{"dlq", "list", "--queue", "rabbitmq", "--amqp-url", "amqp://bob:AAA@BBBsecret@127.0.0.1:1/"}},
		{"--amqp-url", []string{"dlq", "list", "--queue", "rabbitmq", "--amqp-url", "amqp://guest:guest@127.0.0.1:1/,amqp://bob:AAA@BBBsecret@127.0.0.1:1/"}},
		{"--redis-url", []string{"--listen", "127.0.0.1:0", "--cache", "redis", "--redis-url", "redis://bob:AAA@BBBsecret@127.0.0.1:1/0"}},
	} {
		code, out, errOut := skiapi(c.args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.flag+": the user or password holds an '@'; percent-encode it (%40") {
			t.Errorf("skiapi %s: exit %d, stderr %q; want 2 and one line naming %s and %%40", strings.Join(c.args, " "), code, errOut, c.flag)
		}
		if strings.Contains(out+errOut, "BBBsecret") || strings.Contains(out+errOut, "AAA") || strings.Contains(errOut, "lookup") {
			t.Errorf("skiapi %s printed the password or tried to connect:\n%s%s", strings.Join(c.args, " "), out, errOut)
		}
	}
}

// TestNoCommandPrintsAPassword runs config, migrate, dlq list and a start
// with, in each URL flag, passwords holding a space, a tab, quotes and an
// '@', in a URL as typed, in a percent-encoded URL and in libpq's
// keyword/value form (quoted and backslash-escaped); neither half of the
// password may appear in what is printed.
func TestNoCommandPrintsAPassword(t *testing.T) {
	closed := apitest.ClosedAddr(t)
	host, port, _ := strings.Cut(closed, ":")
	const head, tail = "s3Cr", "tPw9" // the password is head + awkward + tail
	type form struct {
		name string
		url  func(scheme, awkward string) string
	}
	kvQuoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	kvEscaped := strings.NewReplacer(`\`, `\\`, `'`, `\'`, " ", `\ `, "\t", "\\\t")
	forms := []form{
		{"url", func(scheme, a string) string { return scheme + "://bob:" + head + a + tail + "@" + closed + "/x" }},
		{"percent-encoded url", func(scheme, a string) string {
			return scheme + "://bob:" + url.QueryEscape(head+a+tail) + "@" + closed + "/x"
		}},
		{"keyword/value quoted", func(_, a string) string {
			return "host=" + host + " port=" + port + " user=bob password='" + kvQuoted.Replace(head+a+tail) + "' dbname=x"
		}},
		{"keyword/value escaped", func(_, a string) string {
			return "host=" + host + " port=" + port + " user=bob password=" + kvEscaped.Replace(head+a+tail) + " dbname=x"
		}},
	}
	urlFlags := []struct{ flag, scheme string }{{"--database-url", "postgres"}, {"--amqp-url", "amqp"}, {"--redis-url", "redis"}}
	commands := map[string]func(flag string) []string{
		"config": func(string) []string { return []string{"config"} },
		"migrate": func(string) []string {
			return []string{"migrate", "--store", "postgres", "--db-connect-timeout", "1s", "--database-url", "postgres://bob@" + closed + "/x"}
		},
		"dlq list": func(string) []string {
			return []string{"dlq", "list", "--queue", "rabbitmq", "--amqp-url", "amqp://bob@" + closed + "/"}
		},
		"start": func(flag string) []string {
			mode := map[string][]string{
				"--database-url": {"--store", "postgres", "--db-connect-timeout", "1s"},
				"--amqp-url":     {"--queue", "rabbitmq"},
				"--redis-url":    {"--cache", "redis"},
			}[flag]
			return append([]string{"--listen", "127.0.0.1:0"}, mode...)
		},
	}
	for name, base := range commands {
		for _, f := range urlFlags {
			for _, fm := range forms {
				for _, awkward := range []string{" ", "\t", `"`, "'", "@"} {
					args := append(base(f.flag), f.flag, fm.url(f.scheme, awkward))
					code, out, errOut := skiapi(args...)
					if name != "config" && code == 0 {
						t.Errorf("%s %s %s %q: exit 0; want a failure", name, f.flag, fm.name, awkward)
					}
					printed := out + errOut
					if strings.Contains(printed, head) || strings.Contains(printed, tail) {
						t.Errorf("%s %s %s %q: the password was printed:\n%s", name, f.flag, fm.name, awkward, printed)
					}
				}
			}
		}
	}
}

// TestConfigAndStartErrorsMaskEverySecretConnectionParameter: libpq (and
// pgx) take more than the password: sslpassword, the passphrase of the
// client key, and oauth_client_secret. Each was printed in clear by
// skiapi config and by the start-up error, in a URL's query and in the
// keyword/value form.
func TestConfigAndStartErrorsMaskEverySecretConnectionParameter(t *testing.T) {
	closed := apitest.ClosedAddr(t)
	host, port, _ := strings.Cut(closed, ":")
	for _, param := range []string{"sslpassword", "oauth_client_secret"} {
		for _, conn := range []string{
			"postgres://bob@" + closed + "/x?sslmode=disable&" + param + "=k3yS3cret",
			"host=" + host + " port=" + port + " user=bob sslmode=disable " + param + "=k3yS3cret dbname=x",
		} {
			for _, args := range [][]string{
				{"config", "--database-url", conn},
				{"--listen", "127.0.0.1:0", "--store", "postgres", "--db-connect-timeout", "1s", "--database-url", conn},
			} {
				var out, errb strings.Builder
				run(args, &out, &errb)
				printed := out.String() + errb.String()
				if strings.Contains(printed, "k3yS3cret") {
					t.Errorf("skiapi %s printed the %s:\n%s", args[0], param, printed)
				}
				// The connection string is printed, masked: a run that
				// printed no URL at all would pass the check above.
				if !strings.Contains(printed, param+"="+redact.Mask) {
					t.Errorf("skiapi %s did not print the connection string with its %s masked (%s=%s):\n%s", args[0], param, param, redact.Mask, printed)
				}
			}
		}
	}
}
