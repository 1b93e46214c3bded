package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
)

// rawExchange sends raw on a new connection to srv, half-closes it when
// closeWrite is set (the client is gone mid-body), and returns the response.
func rawExchange(t *testing.T, srv *httptest.Server, raw string, closeWrite bool) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUnreadableBodiesAreAnsweredWithFixedTexts: a body that stops coming
// (the server's ReadTimeout) is a 408, and one that cannot be read to its
// end (the client went away, a chunk length that is not hex) a 400, each
// with a fixed text: never the addresses of the connection or a raw Go
// error.
func TestUnreadableBodiesAreAnsweredWithFixedTexts(t *testing.T) {
	h := NewHandler(&Handlers{Ingest: ingestFunc(func(context.Context, domain.LiftRide) error { return nil }), Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	head := "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	cases := []struct {
		name       string
		raw        string
		closeWrite bool
		status     int
		message    string
	}{
		{"chunked body cut mid-chunk", head + "Transfer-Encoding: chunked\r\n\r\n15\r\n{\"time\":1,", true, http.StatusBadRequest, BodyUnreadableMessage},
		{"chunk length not hex", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{\"time\":1,\"liftID\":2}\r\n0\r\n\r\n", false, http.StatusBadRequest, BodyUnreadableMessage},
		{"body shorter than its Content-Length, client gone", head + "Content-Length: 21\r\n\r\n{\"time\":1,", true, http.StatusBadRequest, BodyUnreadableMessage},
		{"body stalls past the read timeout", head + "Content-Length: 21\r\n\r\n{\"time\":1,", false, http.StatusRequestTimeout, BodyTimeoutMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := rawExchange(t, srv, c.raw, c.closeWrite)
			var m ResponseMsg
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &m) != nil || m.Message != c.message {
				t.Errorf("%d %s; want %d {\"message\":%q}", resp.StatusCode, body, c.status, c.message)
			}
			for _, inner := range []string{"127.0.0.1", "tcp", "chunk length", "timeout", "EOF"} {
				if strings.Contains(body, inner) {
					t.Errorf("the body names %q: %s", inner, body)
				}
			}
		})
	}
}
