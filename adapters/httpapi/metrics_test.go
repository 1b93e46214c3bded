package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsEndpointAnswersOtherMethods405: /metrics is served beside the
// generated router; a POST to it was a 404 "no route", as if it did not
// exist. It is a 405 naming the methods it takes, in JSON like every
// other 405, and GET and HEAD reach the metrics handler.
func TestMetricsEndpointAnswersOtherMethods405(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics\n")) })
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("api\n")) })
	h := WithMetrics(api, metrics)
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics", strings.NewReader("x")))
		var m ResponseMsg
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || rec.Header().Get("Content-Type") != "application/json" ||
			json.Unmarshal(rec.Body.Bytes(), &m) != nil || !strings.Contains(m.Message, "method "+method+" is not allowed on /metrics") {
			t.Errorf("%s /metrics = %d Allow %q %s; want 405, Allow: GET, HEAD and a JSON message", method, rec.Code, rec.Header().Get("Allow"), rec.Body.String())
		}
	}
	for target, want := range map[string]string{"GET /metrics": "metrics\n", "HEAD /metrics": "metrics\n", "GET /resorts": "api\n", "POST /metricsx": "api\n", "GET /metrics/": "api\n"} {
		method, path, _ := strings.Cut(target, " ")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Body.String() != want {
			t.Errorf("%s went to %q; want %q", target, rec.Body.String(), want)
		}
	}
}
