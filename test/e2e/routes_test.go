package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/test/apitest"
)

// TestEveryOperationIsAnsweredByItsGeneratedRoute: each operation of
// openapi.yaml, sent as skiload sends it (built by the generated client)
// and as the course's Java client sends it (Swagger Codegen's headers on
// the same request), reaches its handler through the route oapi-codegen
// generated for it. The generated strict handler's middleware logs the
// operation's id at debug level, and only a request it serves passes
// there: a fast path in front of it (a route of its own, another server)
// would leave the request out of the log.
func TestEveryOperationIsAnsweredByItsGeneratedRoute(t *testing.T) {
	p := startSkiapi(t, "skiapi", buildSkiapi(t), "--log-level", "debug")
	s := httpapi.ServerURL(p.base)
	ride := httpapi.LiftRide{Time: ptr[int32](217), LiftID: ptr[int32](21)}
	requests := map[string]func() (*http.Request, error){
		"getResorts":       func() (*http.Request, error) { return httpapi.NewGetResortsRequest(s) },
		"getResortSeasons": func() (*http.Request, error) { return httpapi.NewGetResortSeasonsRequest(s, 1) },
		"addSeason": func() (*http.Request, error) {
			return httpapi.NewAddSeasonRequest(s, 1, httpapi.AddSeasonJSONRequestBody{Year: ptr("2026")})
		},
		"getResortSkiersDay": func() (*http.Request, error) { return httpapi.NewGetResortSkiersDayRequest(s, 1, 2024, 1) },
		"writeNewLiftRide": func() (*http.Request, error) {
			return httpapi.NewWriteNewLiftRideRequest(s, 1, "2024", "1", 7, ride)
		},
		"getSkierDayVertical": func() (*http.Request, error) { return httpapi.NewGetSkierDayVerticalRequest(s, 1, "2024", "1", 7) },
		"getSkierResortTotals": func() (*http.Request, error) {
			return httpapi.NewGetSkierResortTotalsRequest(s, 7, &httpapi.GetSkierResortTotalsParams{Resort: []string{"1"}})
		},
		"getSkierSeasonDays":  func() (*http.Request, error) { return httpapi.NewGetSkierSeasonDaysRequest(s, "2024", 7) },
		"getSkierDayRides":    func() (*http.Request, error) { return httpapi.NewGetSkierDayRidesRequest(s, "2024", "1", 7) },
		"getPerformanceStats": func() (*http.Request, error) { return httpapi.NewGetPerformanceStatsRequest(s) },
		"getHealthz":          func() (*http.Request, error) { return httpapi.NewGetHealthzRequest(s) },
		"getReadyz":           func() (*http.Request, error) { return httpapi.NewGetReadyzRequest(s) },
	}
	spec, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var operations []string
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			operations = append(operations, op.OperationID)
		}
	}
	slices.Sort(operations)
	for _, op := range operations {
		if requests[op] == nil {
			t.Fatalf("no request for the operation %s; add one to this test", op)
		}
	}
	if len(requests) != len(operations) {
		t.Fatalf("the test sends %d operations, the spec has %d: %v", len(requests), len(operations), operations)
	}

	// sent counts, per operation, the requests its handler answered.
	sent := map[string]int{}
	for _, op := range operations {
		for _, shape := range []func(*http.Request){func(*http.Request) {}, asTheJavaClientSends} {
			req, err := requests[op]()
			if err != nil {
				t.Fatal(err)
			}
			shape(req)
			r := apitest.Send(t, apitest.Req(req, nil))
			if r.Status >= 500 {
				t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, r.Status, r.Body)
			}
			sent[op]++
		}
	}
	apitest.Eventually(t, "a debug line per request from each operation's generated route", func() string {
		served := map[string]int{}
		sc := bufio.NewScanner(strings.NewReader(p.log()))
		for sc.Scan() {
			var line struct{ Level, Msg string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Level == "DEBUG" {
				served[line.Msg]++
			}
		}
		var missing []string
		for _, op := range operations {
			if got := served[goName(op)]; got != sent[op] {
				missing = append(missing, fmt.Sprintf("%s %d of %d", op, got, sent[op]))
			}
		}
		if len(missing) > 0 {
			return "served by their generated routes: " + strings.Join(missing, ", ")
		}
		return ""
	})
}

// asTheJavaClientSends gives req the headers the course's Java client
// (Swagger Codegen's, on OkHttp) sends.
func asTheJavaClientSends(req *http.Request) {
	req.Header.Set("User-Agent", "Swagger-Codegen/1.0.0/java")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Connection", "Keep-Alive")
	if req.Body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
}

// goName is an operation's id as the generated code names it, and as it
// logs it: its first letter upper-case.
func goName(operationID string) string {
	r := []rune(operationID)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func ptr[T any](v T) *T { return &v }
