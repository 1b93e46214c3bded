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

var (
	// ?password=... or &password=... in a URL's query.
	queryPassword = regexp.MustCompile(`(?i)([?&](?:password|passwd)=)[^&#\s]*`)
	// password='...' or password=... in a keyword/value connection string.
	kvPassword = regexp.MustCompile(`(?i)((?:^|\s)(?:password|passwd)\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S+)`)
)

// Secrets returns s with every password it can find masked: the userinfo
// password of any scheme://user:password@host, the password query
// parameter, and password=... in a keyword/value connection string. It
// does not parse: a URL that does not parse (a bad port, a password with
// '/', '#', '?' or a bad %-escape in it) is masked all the same, from the
// first ':' after the scheme's "//" to the last '@' of that word, which
// errs on the side of masking too much.
func Secrets(s string) string {
	s = maskUserinfo(s)
	s = queryPassword.ReplaceAllString(s, "${1}"+Mask)
	return kvPassword.ReplaceAllString(s, "${1}"+Mask)
}

// maskUserinfo masks user:password@ in each whitespace-separated word that
// has a scheme.
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
		end := strings.IndexAny(rest, " \t\r\n")
		if end < 0 {
			end = len(rest)
		}
		word := rest[:end]
		if at := strings.LastIndexByte(word, '@'); at >= 0 {
			if colon := strings.IndexByte(word[:at], ':'); colon >= 0 {
				word = word[:colon+1] + Mask + word[at:]
			}
		}
		b.WriteString(word)
		rest = rest[end:]
	}
}
