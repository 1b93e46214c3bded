package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// checkedRouter is the BaseRouter given to the generated code: it registers
// each route on the ServeMux behind the checks every route shares, which
// must run before the generated wrapper binds the parameters (the
// wrapper's middlewares run after the binding, too late to word these
// errors).
type checkedRouter struct{ *http.ServeMux }

// pathParam matches a wildcard of a route pattern, "{resortID}".
var pathParam = regexp.MustCompile(`\{(\w+)\}`)

func (m checkedRouter) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	var params []string
	for _, p := range pathParam.FindAllStringSubmatch(pattern, -1) {
		params = append(params, p[1])
	}
	m.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := malformedQuery(r.URL.RawQuery); msg != "" {
			writeJSONError(w, http.StatusBadRequest, msg)
			return
		}
		for _, name := range params {
			if v := r.PathValue(name); !canonicalDecimal(v) {
				writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%s must be a whole number in plain decimal (digits only, no sign, no leading zeros), got %q", name, v))
				return
			}
		}
		h(w, r)
	}))
}

// canonicalDecimal: every path parameter of the API is an id, and an id
// has one spelling, so that /skiers/012/... and /skiers/12/... are not
// two names of one resource and every route takes the same ids: digits, no
// "+", no leading zero. A negative number in its one spelling ("-4", not
// "-04" or "-0") passes here so that the domain's range check can say the
// id must be positive; the range (32 bits, then the domain's) is checked
// after.
func canonicalDecimal(s string) bool {
	digits, negative := strings.CutPrefix(s, "-")
	if digits == "" || digits[0] == '0' && (len(digits) > 1 || negative) {
		return false
	}
	s = digits
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
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

// WithDeadline gives every request's context the handler timeout d: the
// store and queue calls honour it, and a request past it is answered 503.
func WithDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
