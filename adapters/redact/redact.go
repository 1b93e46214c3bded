// Package redact masks secrets in text that is about to be printed: flag
// values, the effective configuration, error messages and logs. It is not
// an adapter but the one helper every adapter and the composition share
// (the dependency test allows it by name), so that a password is masked
// the same way wherever a URL or a connection string can be shown.
package redact

import (
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "xxxxx"

// secretParams are the connection parameters whose value is a secret:
// libpq's password, sslpassword (the passphrase of the client key,
// sslkey) and oauth_client_secret (PostgreSQL 18), which pgx reads too,
// and the passwd some drivers take for password. libpq's other parameters
// name files (passfile, sslkey, sslcert) or hold nothing secret.
const secretParams = `(?:password|passwd|sslpassword|oauth_client_secret)`

var (
	// ?password=... or &password=... in a URL's query.
	queryPassword = regexp.MustCompile(`(?i)([?&]` + secretParams + `=)[^&#\s]*`)
	// password='...' or password=... in a keyword/value connection string,
	// as libpq reads it: a quoted value runs to the closing quote, \' and
	// \\ inside it escaped; an unquoted one to the first whitespace that
	// no backslash escapes. An unterminated quote runs to the end.
	kvPassword = regexp.MustCompile(`(?is)((?:^|\s)` + secretParams + `\s*=\s*)(?:'(?:[^'\\]|\\.)*(?:'|\\?$)|(?:[^\s'\\]|\\.)(?:[^\s\\]|\\.)*\\?)`)
	// nextURL is where a URL ends: whitespace, then another scheme://.
	nextURL = regexp.MustCompile(`\s[A-Za-z][A-Za-z0-9+.\-]*://`)
)

// Secrets returns s with every password it can find masked: the userinfo
// password of any scheme://user:password@host, and each of secretParams as
// a query parameter or in a keyword/value connection string. It
// does not parse: a URL that does not parse (a bad port, a password with
// '/', '#', '?', '@', whitespace, quotes or a bad %-escape in it) is masked
// all the same, from the first ':' after the scheme's "//" to the last '@'
// before the next URL (whitespace then scheme://) or the end of s, which
// errs on the side of masking too much. A password that itself holds
// whitespace followed by scheme:// cannot be told from two URLs.
func Secrets(s string) string {
	s = maskUserinfo(s)
	s = queryPassword.ReplaceAllString(s, "${1}"+Mask)
	return kvPassword.ReplaceAllString(s, "${1}"+Mask)
}

// maskUserinfo masks user:password@ of each scheme:// in s. A URL runs to
// the next one or the end of s, not to the first whitespace: a password may
// hold spaces, tabs or quotes, and an error message quotes the URL whole.
func maskUserinfo(s string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		start := i + len("://")
		b.WriteString(rest[:start])
		rest = rest[start:]
		end := len(rest)
		if loc := nextURL.FindStringIndex(rest); loc != nil {
			end = loc[0]
		}
		url := rest[:end]
		if at := strings.LastIndexByte(url, '@'); at >= 0 {
			if colon := strings.IndexByte(url[:at], ':'); colon >= 0 {
				url = url[:colon+1] + Mask + url[at:]
			}
		}
		b.WriteString(url)
		rest = rest[end:]
	}
}
