package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// call serves one request with the API's handler (no dependencies: every
// request here must be refused before a handler uses one).
func call(t *testing.T, method, target string, header http.Header, body string) (*httptest.ResponseRecorder, ResponseMsg) {
	t.Helper()
	h := NewHandler(&Handlers{Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
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
