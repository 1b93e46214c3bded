package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestSecretsMasksEveryForm(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/":                       "amqp://guest:xxxxx@127.0.0.1:5672/",
		"amqps://u:s3cret@b-1.mq.eu-west-1.amazonaws.com:5671/":    "amqps://u:xxxxx@b-1.mq.eu-west-1.amazonaws.com:5671/",
		"postgres://u:s3cret@db:5432/x?sslmode=require":            "postgres://u:xxxxx@db:5432/x?sslmode=require",
		"postgres://u@db/x?user=u&password=s3cret&sslmode=disable": "postgres://u@db/x?user=u&password=xxxxx&sslmode=disable",
		"host=db user=u password=s3cret dbname=x":                  "host=db user=u password=xxxxx dbname=x",
		"host=db password='s3 cret' dbname=x":                      "host=db password=xxxxx dbname=x",
		"redis://:s3cret@cache:6379/0":                             "redis://:xxxxx@cache:6379/0",
		"postgres://u:s3cret@db:notaport/ski":                      "postgres://u:xxxxx@db:notaport/ski",
		"postgres://u:p%zz/#?@db/x":                                "postgres://u:xxxxx@db/x",
		"dial amqp://u:a@b@mq:5672/: connection refused":           "dial amqp://u:xxxxx@mq:5672/: connection refused",
		"amqp://mq.internal:5672/":                                 "amqp://mq.internal:5672/",
		"postgres://postgres@127.0.0.1:5432/test":                  "postgres://postgres@127.0.0.1:5432/test",
		":8080": ":8080",
		"two: amqp://a:one@h/ and postgres://b:two@h/": "two: amqp://a:xxxxx@h/ and postgres://b:xxxxx@h/",
		// Whitespace and quotes do not end a password: a URL runs to the
		// next scheme:// or the end of the text.
		"postgres://bob:Sec ret3@127.0.0.1/prod":             "postgres://bob:xxxxx@127.0.0.1/prod",
		"postgres://bob:Sec\tret3@127.0.0.1/prod":            "postgres://bob:xxxxx@127.0.0.1/prod",
		`postgres://bob:"quoted pw"@127.0.0.1/prod`:          "postgres://bob:xxxxx@127.0.0.1/prod",
		`parse "amqp://u:a b@mq:bad/": invalid port ":bad"`:  `parse "amqp://u:xxxxx@mq:bad/": invalid port ":bad"`,
		"redis://:s3 cret@cache:6379/0 and amqp://u:p w@mq/": "redis://:xxxxx@cache:6379/0 and amqp://u:xxxxx@mq/",
		"postgres://bob:AAA@BBBsecret@127.0.0.1:1/prod":      "postgres://bob:xxxxx@127.0.0.1:1/prod",
		// Keyword/value: single quotes and backslash escapes, as libpq.
		`host=db password=Sec\ ret13 user=bob`:       "host=db password=xxxxx user=bob",
		`host=db password='it\'s a secret' user=bob`: "host=db password=xxxxx user=bob",
		`host=db password='unterminated secret`:      "host=db password=xxxxx",
		`host=db password=back\\slash user=bob`:      "host=db password=xxxxx user=bob",
		// Every libpq parameter that holds a secret: the client key's
		// passphrase and the OAuth client secret too.
		"postgres://u@db/x?sslmode=verify-full&sslkey=/k.pem&sslpassword=s3cret": "postgres://u@db/x?sslmode=verify-full&sslkey=/k.pem&sslpassword=xxxxx",
		"postgres://u@db/x?oauth_client_id=ski&oauth_client_secret=s3cret":       "postgres://u@db/x?oauth_client_id=ski&oauth_client_secret=xxxxx",
		"host=db sslkey=/k.pem sslpassword='s3 cret' dbname=x":                   "host=db sslkey=/k.pem sslpassword=xxxxx dbname=x",
		"host=db oauth_client_secret=s3cret dbname=x":                            "host=db oauth_client_secret=xxxxx dbname=x",
		"host=db SSLPASSWORD = s3cret":                                           "host=db SSLPASSWORD = xxxxx",
	} {
		if got := Secrets(in); got != want {
			t.Errorf("Secrets(%q) = %q; want %q", in, got, want)
		}
	}
}

// kvEscaper escapes an unquoted keyword/value: backslash, and whitespace.
var kvEscaper = strings.NewReplacer(`\`, `\\`, " ", `\ `, "\t", "\\\t", "\r", "\\\r", "\n", "\\\n", "\v", "\\\v", "\f", "\\\f")

// FuzzSecretsLetNoPasswordThrough builds the URL and connection-string
// forms around any password and checks that the masked text shows it in
// neither its raw nor its escaped spelling.
func FuzzSecretsLetNoPasswordThrough(f *testing.F) {
	for _, seed := range []string{"s3cret", "p%zz/", "a#b?c", "@@@@", "with space", "x:y@z", "'quoted'", "%41%42", "pass&word=1"} {
		f.Add("skier", seed)
	}
	f.Fuzz(func(t *testing.T, user, password string) {
		if len(password) < 4 || strings.ContainsAny(user, ":@/ \t\r\n") || strings.Contains(password, "://") {
			return // too short to tell from the rest of the text; or holds the start of another URL
		}
		const pw = "\x00PASSWORD\x00" // where the (escaped) password goes
		forms := []struct{ template, spelling string }{
			{"postgres://" + user + ":" + pw + "@db.internal:5432/ski?sslmode=require", password},
			{"amqps://" + user + ":" + pw + "@mq.internal:5671/", url.PathEscape(password)},
			{"redis://" + user + ":" + pw + "@cache:6379/0", url.QueryEscape(password)},
			{"postgres://db.internal/ski?user=u&password=" + pw, url.QueryEscape(password)},
			{"postgres://db.internal/ski?sslkey=/k.pem&sslpassword=" + pw, url.QueryEscape(password)},
		}
		// Keyword/value, escaped as libpq reads it.
		unquoted := kvEscaper.Replace(password)
		if strings.HasPrefix(unquoted, "'") {
			unquoted = `\` + unquoted
		}
		quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password)
		forms = append(forms,
			struct{ template, spelling string }{"host=db.internal user=u password=" + pw + " dbname=ski", unquoted},
			struct{ template, spelling string }{"host=db.internal password='" + pw + "' dbname=ski", quoted},
			struct{ template, spelling string }{"host=db.internal sslpassword=" + pw + " dbname=ski", unquoted})
		for _, f := range forms {
			if strings.Contains(strings.Replace(f.template, pw, "", 1), f.spelling) {
				continue // the rest of the text spells it too: nothing to tell apart
			}
			in := strings.Replace(f.template, pw, f.spelling, 1)
			if got := Secrets(in); strings.Contains(got, f.spelling) {
				t.Fatalf("Secrets(%q) = %q shows the password %q", in, got, f.spelling)
			}
		}
	})
}
