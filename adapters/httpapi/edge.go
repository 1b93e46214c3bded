package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// checkedRouter is the BaseRouter given to the generated code: it registers
// each route on the ServeMux behind the checks every route shares, which
// must run before the generated wrapper binds the parameters (the
// wrapper's middlewares run after the binding, too late to word these
// errors).
type checkedRouter struct{ *http.ServeMux }

func (m checkedRouter) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	next := http.HandlerFunc(h)
	m.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := malformedQuery(r.URL.RawQuery); msg != "" {
			writeJSONError(w, http.StatusBadRequest, msg)
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// malformedQuery says what is wrong with a query string that does not
// parse, or "" when it parses. URL.Query, which the generated binding
// reads, drops a pair it cannot parse without a word, so ?resort=1%zz read
// as no resort at all.
func malformedQuery(raw string) string {
	if !strings.ContainsAny(raw, "%;") {
		return "" // only an escape or a semicolon can fail to parse
	}
	_, err := url.ParseQuery(raw)
	if err == nil {
		return ""
	}
	const prefix = "the query string is malformed: "
	var esc url.EscapeError
	switch {
	case errors.As(err, &esc):
		return prefix + fmt.Sprintf(`%q is not a percent-escape: "%%" must be followed by two hex digits (send a literal "%%" as %%25)`, string(esc))
	case strings.Contains(raw, ";"):
		return prefix + `";" does not separate parameters; use "&" (send a literal ";" as %3B)`
	default:
		return prefix + "see RFC 3986 for the syntax of a query"
	}
}
