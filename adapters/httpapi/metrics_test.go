package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsEndpointAnswersOtherMethods405: /metrics is served beside the
// generated routes; a POST to it was a 404 "no route", as if it did not
// exist. It is a 405 naming the methods it takes, in JSON like every
// other 405, GET and HEAD reach the metrics handler, and it is not counted
// in /statistics.
func TestMetricsEndpointAnswersOtherMethods405(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics\n")) })
	stats := &statsRec{}
	h := NewHandler(&Handlers{Metrics: metrics, Stats: stats}, slog.New(slog.DiscardHandler))
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics", strings.NewReader("x")))
		var m ResponseMsg
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || rec.Header().Get("Content-Type") != "application/json" ||
			json.Unmarshal(rec.Body.Bytes(), &m) != nil || !strings.Contains(m.Message, "method "+method+" is not allowed on /metrics") {
			t.Errorf("%s /metrics = %d Allow %q %s; want 405, Allow: GET, HEAD and a JSON message", method, rec.Code, rec.Header().Get("Allow"), rec.Body.String())
		}
	}
	for target, want := range map[string]int{"GET /metrics": 200, "HEAD /metrics": 200, "POST /metricsx": 404, "GET /metrics/": 404, "GET /./metrics": 404} {
		method, path, _ := strings.Cut(target, " ")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if metricsServed := rec.Body.String() == "metrics\n"; rec.Code != want || metricsServed != (want == 200) {
			t.Errorf("%s = %d %q; want %d, from the metrics handler only when 200", target, rec.Code, rec.Body.String(), want)
		}
	}
	if len(stats.routes) != 0 {
		t.Errorf("/statistics recorded %v; /metrics is not the API's", stats.routes)
	}
}
