package compose

import (
	"fmt"
	"strings"
)

// validateURLs refuses, before anything connects, a URL whose user or
// password holds an '@', whitespace, a control character or a quote as it
// is: the parsers read such a URL differently (the part after an '@'
// becomes the host, and reaches the resolver and its error message), and
// a quote or a space there is a shell quoting mistake more often than a
// password. The message names the flag and what to do, not the password.
func (c Config) validateURLs() error {
	urls := []struct{ flag, value string }{{"database-url", c.Postgres.URL}, {"redis-url", c.Redis.URL}}
	for _, node := range strings.Split(c.AMQP.URL, ",") { // --amqp-url lists a cluster's nodes
		urls = append(urls, struct{ flag, value string }{"amqp-url", strings.TrimSpace(node)})
	}
	for _, u := range urls {
		if what := unescapedInUserinfo(u.value); what != "" {
			return fmt.Errorf("--%s: the user or password holds %s; percent-encode it (%%40 for @, %%20 for a space, %%09 for a tab, %%22 and %%27 for quotes)", u.flag, what)
		}
	}
	return nil
}

// unescapedInUserinfo names what in the userinfo of the URL s (everything
// between "scheme://" and the last '@') must be percent-encoded, or "" if
// nothing. A keyword/value connection string (no "://") has none.
func unescapedInUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	rest := s[i+len("://"):]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	for _, r := range rest[:at] {
		switch {
		case r == '@':
			return "an '@'"
		case r == ' ':
			return "a space"
		case r == '\t':
			return "a tab"
		case r == '"' || r == '\'':
			return "a quote"
		case r < 0x20 || r == 0x7f:
			return "a control character"
		}
	}
	return ""
}
