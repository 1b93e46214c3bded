package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

// netHTTPTableHeader opens docs/api.md's table of what net/http answers
// itself, before any handler of the service runs.
const netHTTPTableHeader = "| request | status | body |"

// netHTTPCases are the raw requests of each row of that table, keyed by
// the row's first cell as docs/api.md spells it.
var netHTTPCases = map[string][]string{
	"HTTP/1.1 without a `Host` header":                                {"GET /resorts HTTP/1.1\r\n\r\n"},
	"a malformed percent-escape in the path (`/resorts/%zz/seasons`)": {"GET /resorts/%zz/seasons HTTP/1.1\r\nHost: x\r\n\r\n"},
	"a control character in the request line or in a header": {
		"GET /resorts\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /resorts HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
	},
	"two `Host` headers": {"GET /resorts HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"},
	"two different `Content-Length` headers, or one that is not a number": {
		"POST /resorts/1/seasons HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"POST /resorts/1/seasons HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
	},
	"a malformed method or HTTP version (`G(T`, `HTTP/1.x`)": {
		"G(T /resorts HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /resorts HTTP/1.x\r\nHost: x\r\n\r\n",
	},
	"an `HTTP/2.0` request line on an HTTP/1 connection":              {"GET /resorts HTTP/2.0\r\nHost: x\r\n\r\n"},
	"a `Transfer-Encoding` other than `chunked`":                      {"POST /resorts/1/seasons HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"},
	"headers over 1 MiB":                                              {"GET /resorts HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+4096) + "\r\n\r\n"},
	"an `Expect` other than `100-continue`":                           {"POST /resorts/1/seasons HTTP/1.1\r\nHost: x\r\nExpect: soon\r\nContent-Length: 2\r\n\r\n{}"},
	"headers not complete within `--http-read-timeout` (at most 5 s)": {"GET /resorts HTTP/1.1\r\nHost: x\r\n"},
}

// apiDocNetHTTPRows returns the rows of docs/api.md's table: first cell,
// status, body.
func apiDocNetHTTPRows(t *testing.T) [][3]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs/api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n"+netHTTPTableHeader+"\n")
	if !ok {
		t.Fatalf("docs/api.md has no table headed %q", netHTTPTableHeader)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var rows [][3]string
	for _, line := range strings.Split(table, "\n")[1:] { // after |---|
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("docs/api.md row %q does not have 3 cells", line)
		}
		rows = append(rows, [3]string{strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
	}
	return rows
}

// TestWhatNetHTTPAnswersItselfIsPlainText: docs/api.md says every error of
// the service is JSON, except the answers net/http gives before a handler
// runs, which it lists. Each row of that list is sent as a raw request
// to a running service and must be answered as the row says (status and
// body, in plain text, or no answer at all); every case here must be a
// row, and every row a case.
func TestWhatNetHTTPAnswersItselfIsPlainText(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.HTTP.ReadTimeout = 300 * time.Millisecond // the header cut-off is min(5 s, this)
	addr := strings.TrimPrefix(apitest.Start(t, cfg), "http://")
	rows := apiDocNetHTTPRows(t)
	seen := map[string]bool{}
	for _, row := range rows {
		request, status, body := row[0], row[1], row[2]
		raws, ok := netHTTPCases[request]
		if !ok {
			t.Errorf("docs/api.md lists %q, which this test does not send; add its request to netHTTPCases", request)
			continue
		}
		seen[request] = true
		for _, raw := range raws {
			got := rawAnswer(t, addr, raw)
			short := raw[:min(len(raw), 60)]
			if status == "none" {
				if len(got) != 0 {
					t.Errorf("%s (%q): answered %q; docs/api.md says the connection is closed without an answer", request, short, got)
				}
				continue
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
			if err != nil {
				t.Errorf("%s (%q): no HTTP answer (%v): %q", request, short, err, got)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ctype := resp.Header.Get("Content-Type")
			wantBody, wantType := strings.Trim(body, "`"), "text/plain; charset=utf-8"
			if body == "empty" {
				wantBody, wantType = "", ""
			}
			if resp.Status[:3] != status || string(b) != wantBody || ctype != wantType {
				t.Errorf("%s (%q): %s %q (%s); docs/api.md says %s %q (%s)", request, short, resp.Status, b, ctype, status, wantBody, wantType)
			}
		}
	}
	for request := range netHTTPCases {
		if !seen[request] {
			t.Errorf("docs/api.md does not list %q, which net/http answers itself", request)
		}
	}
}

// rawAnswer writes raw on a new connection and returns all the server
// sends until it closes the connection.
func rawAnswer(t *testing.T, addr, raw string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	go func() { _, _ = io.WriteString(c, raw) }() // the server may answer before it has read it all
	got, _ := io.ReadAll(c)
	return got
}
