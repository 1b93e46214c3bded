package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

// TestFastHTTPServerEndToEnd runs the API suite against a service on the
// fasthttp front (--http-server fasthttp), memory mode.
func TestFastHTTPServerEndToEnd(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.HTTP.Server = compose.ServerFastHTTP
	apitest.Run(t, apitest.Start(t, cfg))
}

// TestFastHTTPServerRabbitMQEndToEnd runs it with rides going through
// RabbitMQ, where every request has the handler timeout's deadline.
func TestFastHTTPServerRabbitMQEndToEnd(t *testing.T) {
	cfg := rabbitConfig(t, "fasthttp")
	cfg.HTTP.Server = compose.ServerFastHTTP
	apitest.Run(t, apitest.Start(t, cfg))
}

// TestTheFastHTTPServerAnswersWhatItRefusesInJSON: on the fasthttp front,
// every request net/http refuses itself in plain text (the README's
// table), a body over the limit (declared or chunked), a body that stops
// arriving and headers over the read buffer are answered with a JSON
// message and a 4xx status, or the connection is closed without an
// answer; never a 5xx, never plain text.
func TestTheFastHTTPServerAnswersWhatItRefusesInJSON(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.HTTP.Server = compose.ServerFastHTTP
	cfg.HTTP.ReadTimeout = 300 * time.Millisecond
	addr := strings.TrimPrefix(apitest.Start(t, cfg), "http://")
	cases := map[string]string{
		"a body over the limit":         "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + strings.Repeat("a", 5000),
		"a chunked body over the limit": "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" + strings.Repeat("a", 5000) + "\r\n0\r\n\r\n",
		"a body that stops arriving":    "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{\"time\":1,",
		"headers over the read buffer":  "GET /resorts HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 32<<10) + "\r\n\r\n",
		"a path that is not a URL":      "GET /resorts/%zz/seasons HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	for request, raws := range netHTTPCases {
		for i, raw := range raws {
			cases[fmt.Sprintf("%s (%d)", request, i)] = raw
		}
	}
	want := map[string]int{
		"a body over the limit": http.StatusRequestEntityTooLarge, "a chunked body over the limit": http.StatusRequestEntityTooLarge,
		"a body that stops arriving": http.StatusRequestTimeout, "headers over the read buffer": http.StatusRequestHeaderFieldsTooLarge,
		"a path that is not a URL": http.StatusBadRequest,
	}
	for request, raw := range cases {
		got := rawAnswer(t, addr, raw)
		if len(got) == 0 {
			if _, named := want[request]; named {
				t.Errorf("%s: no answer; want %d", request, want[request])
			}
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
		if err != nil {
			t.Errorf("%s: no HTTP answer (%v): %q", request, err, got[:min(len(got), 200)])
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if status, named := want[request]; named && resp.StatusCode != status {
			t.Errorf("%s: %s %q; want %d", request, resp.Status, body, status)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%s: %s %q; want no 5xx", request, resp.Status, body)
		}
		if resp.StatusCode >= 400 {
			var msg struct{ Message string }
			if err := json.Unmarshal(body, &msg); err != nil || msg.Message == "" || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %s %q (%s); want a JSON message", request, resp.Status, body, resp.Header.Get("Content-Type"))
			}
		}
	}
}
