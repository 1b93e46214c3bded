package e2e

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
)

// fuzzService is one memory-mode service per fuzzing process, serving (so
// that its persister drains the queue) and reached in-process through its
// handler, so an input costs no network round trip.
var fuzzService = sync.OnceValues(func() (http.Handler, error) {
	cfg := compose.DefaultConfig()
	cfg.LogLevel = "error"
	svc, _, err := compose.Build(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// It lives as long as the test process: a fuzz run has no end to hook.
	go func() { _ = svc.Serve(context.Background(), ln) }()
	return svc.Handler(), nil
})

// FuzzHandlers sends any method, path and body through the whole handler
// stack (router, strict bodies, handlers, the real use cases over the memory
// store) and requires a 2xx or 4xx answer, JSON unless it is /metrics, never
// a 5xx or a panic. The seed corpus (testdata/fuzz/FuzzHandlers, plus the
// seeds below) runs under plain `go test`; fuzz with
//
//	go test -run '^$' -fuzz FuzzHandlers -fuzztime 5m ./test/e2e
func FuzzHandlers(f *testing.F) {
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`},
		{"POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":2147483647}`},
		{"POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":1,"liftID":2}{"time":5,"liftID":9}`},
		{"POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"TIME":3,"LIFTID":4}`},
		{"POST", "/resorts/1/seasons", `{"year":"2030"}`},
		{"GET", "/skiers/42/vertical?resort=1&resort=99999", ""},
		{"GET", "/skiers/42/vertical?resort=1&season=2024&season=x", ""},
		{"GET", "/skiers/1/seasons/2024/days/1/skiers/2", ""},
		{"GET", "/skiers/seasons/2024/days/1/skiers/2", ""},
		{"GET", "/skiers/seasons/2024/skiers/2", ""},
		{"GET", "/resorts/1/seasons/2024/day/1/skiers", ""},
		{"GET", "/resorts", ""},
		{"GET", "/readyz", ""},
		{"DELETE", "/resorts", ""},
	} {
		f.Add(s.method, s.path, []byte(s.body))
	}
	h, err := fuzzService()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://skidata.test"+path, strings.NewReader(string(body)))
		if err != nil || req.URL.Path == "" {
			return // not a request an HTTP client could send
		}
		req.RequestURI = req.URL.RequestURI()
		ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		res := rec.Result()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 500 || res.StatusCode < 200 || (res.StatusCode >= 300 && res.StatusCode < 400) {
			t.Fatalf("%s %q body %q: status %d %s; want 2xx or 4xx", method, path, body, res.StatusCode, b)
		}
		if len(b) == 0 || (req.Method == "GET" && req.URL.Path == "/metrics" && res.StatusCode == 200) {
			return
		}
		if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); ct != "application/json" || !json.Valid(b) {
			t.Fatalf("%s %q body %q: status %d, Content-Type %q, body %q; want JSON", method, path, body, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
		if res.StatusCode >= 400 {
			var m struct{ Message string }
			if json.Unmarshal(b, &m) != nil || m.Message == "" {
				t.Fatalf("%s %q: status %d body %q; want {\"message\":...}", method, path, res.StatusCode, b)
			}
		}
	})
}
