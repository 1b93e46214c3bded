package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
)

// edgeHandler is the API's handler with no dependencies, built once: every
// request sent to it must be refused before a handler uses one, and
// building it reads the whole OpenAPI document.
var edgeHandler = sync.OnceValue(func() http.Handler {
	return NewHandler(&Handlers{Stats: nopStats{}}, slog.New(slog.DiscardHandler))
})

type nopStats struct{}

func (nopStats) Observe(string, string, int, time.Duration) {}
func (nopStats) Snapshot() []ports.EndpointStat             { return nil }

// call serves one request with edgeHandler.
func call(t *testing.T, method, target string, header http.Header, body string) (*httptest.ResponseRecorder, ResponseMsg) {
	t.Helper()
	h := edgeHandler()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m ResponseMsg
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%s %s: body %q (%s) is not a JSON message", method, target, rec.Body.String(), rec.Header().Get("Content-Type"))
	}
	return rec, m
}

// TestMalformedQueryStringIsRefusedAsMalformed: net/http's URL.Query drops
// a pair it cannot parse, so ?resort=1%zz read as no resort at all and was
// answered "query parameter resort is required" although resort was sent.
func TestMalformedQueryStringIsRefusedAsMalformed(t *testing.T) {
	for query, want := range map[string]string{
		"resort=1%zz":       `"%zz" is not a percent-escape`,
		"resort=1;resort=2": `";" does not separate parameters; use "&"`,
		"resort=1&season=%": `"%" is not a percent-escape`,
	} {
		for _, path := range []string{"/skiers/42/vertical", "/resorts"} {
			rec, m := call(t, "GET", path+"?"+query, nil, "")
			if rec.Code != http.StatusBadRequest || !strings.HasPrefix(m.Message, "the query string is malformed: ") || !strings.Contains(m.Message, want) {
				t.Errorf("GET %s?%s = %d %q; want 400 \"the query string is malformed: ...\" saying %s", path, query, rec.Code, m.Message, want)
			}
		}
	}
}

// TestPathIDsMustBeCanonicalDecimalOnEveryRoute: every path parameter of
// every operation in the spec is an id written in plain decimal; +1, 00001
// and 012 are refused with a 400 naming the parameter (-1 is a number in
// its one spelling, left to the range check to refuse as not positive) (they were accepted
// on some routes and refused on others). The routes are read from the
// embedded spec, so a new one is covered.
func TestPathIDsMustBeCanonicalDecimalOnEveryRoute(t *testing.T) {
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	valid := map[string]string{"resortID": "1", "seasonID": "2024", "dayID": "1", "skierID": "2"}
	param := regexp.MustCompile(`\{(\w+)\}`)
	routes := 0
	for path, item := range spec.Paths.Map() {
		names := param.FindAllStringSubmatch(path, -1)
		if len(names) == 0 {
			continue
		}
		for method := range item.Operations() {
			routes++
			for _, name := range names {
				for _, bad := range []string{"+1", "00001", "012", "02024", "-01", "-0", "--1", "-", "1e3", "0x1", "%201", "1%20"} {
					target := param.ReplaceAllStringFunc(path, func(p string) string {
						n := strings.Trim(p, "{}")
						if n == name[1] {
							return bad
						}
						if v, ok := valid[n]; ok {
							return v
						}
						t.Fatalf("%s: no valid value for %s; add one to this test", path, n)
						return ""
					})
					rec, m := call(t, method, target, http.Header{"Content-Type": {"application/json"}}, `{}`)
					if rec.Code != http.StatusBadRequest || !strings.HasPrefix(m.Message, name[1]+" must be a whole number in plain decimal") {
						t.Errorf("%s %s = %d %q; want 400 \"%s must be a whole number in plain decimal ...\"", method, target, rec.Code, m.Message, name[1])
					}
				}
			}
		}
	}
	if routes < 8 {
		t.Fatalf("only %d routes with path parameters in the spec; the test is not reading it", routes)
	}
}

// TestEncodedBodyIs415: the server does not decode a Content-Encoding; a
// gzip body was handed to the JSON decoder and refused as "invalid
// character '\x1f'".
func TestEncodedBodyIs415(t *testing.T) {
	for _, enc := range []string{"gzip", "deflate", "br", "identity, gzip"} {
		for _, path := range []string{"/skiers/1/seasons/2024/days/1/skiers/2", "/resorts/1/seasons"} {
			rec, m := call(t, "POST", path, http.Header{"Content-Encoding": {enc}, "Content-Type": {"application/json"}}, "\x1f\x8b\x08")
			if rec.Code != http.StatusUnsupportedMediaType || !strings.Contains(m.Message, "send plain JSON") || rec.Header().Get("Accept-Encoding") != "identity" {
				t.Errorf("POST %s with Content-Encoding %s = %d %q (Accept-Encoding %q); want 415 saying to send plain JSON, Accept-Encoding: identity", path, enc, rec.Code, m.Message, rec.Header().Get("Accept-Encoding"))
			}
		}
	}
	// identity is no encoding: the body is read as it is.
	rec, m := call(t, "POST", "/resorts/1/seasons", http.Header{"Content-Encoding": {"identity"}}, `{"Year":"2026"}`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(m.Message, `field "Year"`) {
		t.Errorf("Content-Encoding: identity = %d %q; want the body checked as usual", rec.Code, m.Message)
	}
}

// TestUnroutedConnectNamesItsTarget: a CONNECT has no path, so its 404
// said "no route for CONNECT ;"; it names the target it asked for.
func TestUnroutedConnectNamesItsTarget(t *testing.T) {
	rec, m := call(t, "CONNECT", "db.internal:5432", nil, "")
	if rec.Code != http.StatusNotFound || !strings.HasPrefix(m.Message, "no route for CONNECT db.internal:5432;") {
		t.Errorf("CONNECT = %d %q; want 404 \"no route for CONNECT db.internal:5432; ...\"", rec.Code, m.Message)
	}
}

// TestAnAsteriskTargetIsAnsweredInJSON: a request whose target is "*"
// (RFC 9112's asterisk-form, which only OPTIONS may use, and net/http's
// server answers an OPTIONS * itself) was answered by the ServeMux with an
// empty 400; it is a 400 with a JSON message, like every other error.
func TestAnAsteriskTargetIsAnsweredInJSON(t *testing.T) {
	srv := httptest.NewServer(edgeHandler())
	defer srv.Close()
	for _, raw := range []string{"GET * HTTP/1.1\r\nHost: x\r\n\r\n", "POST * HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "DELETE * HTTP/1.0\r\n\r\n"} {
		resp, body := rawExchange(t, srv, raw, false)
		var m ResponseMsg
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &m) != nil ||
			!strings.HasPrefix(m.Message, `request target "*" is not a path`) {
			t.Errorf("%q: %d %q (%s); want 400 {\"message\":\"request target \\\"*\\\" is not a path...\"}", raw, resp.StatusCode, body, resp.Header.Get("Content-Type"))
		}
	}
}
