package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

var rideBodies = []string{
	`{"time":217,"liftID":21}`,
	`{"liftID":21,"time":217}`,
	` { "time" : 0 , "liftID" : 1000 } `,
	"{\n\t\"time\":\r\n1439,\"liftID\":-1}",
	`{"time":-0,"liftID":7}`,
	`{"time":2147483647,"liftID":-2147483648}`,
	`{"time":2147483648,"liftID":1}`,
	`{"time":-2147483649,"liftID":1}`,
	`{"time":99999999999999999999,"liftID":1}`,
	`{"time":1.5,"liftID":1}`,
	`{"time":1e2,"liftID":1}`,
	`{"time":1E2,"liftID":1}`,
	`{"time":"217","liftID":21}`,
	`{"time":true,"liftID":21}`,
	`{"time":null,"liftID":21}`,
	`{"time":217}`,
	`{"liftID":21}`,
	`{}`,
	`null`,
	`[]`,
	``,
	`{"TIME":217,"LIFTID":21}`,
	`{"time":217,"time":218}`,
	`{"time":217,"liftID":21,"extra":1}`,
	`{"time":017,"liftID":21}`,
	`{"time":217,"liftID":21`,
	`{"time":217,"liftID":21}x`,
	`{"time":217,"liftID":21}{"time":5,"liftID":9}`,
	`{"time":-,"liftID":21}`,
	`{"ti\u006de":217,"liftID":21}`,
}

// TestScanRideReadsWhatEncodingJSONReads: every body the ride route reads
// itself is one encoding/json decodes, without error, to the same ride.
func TestScanRideReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range rideBodies {
		if msg := scanAgreesWithEncodingJSON(body); msg != "" {
			t.Error(msg)
		}
	}
}

func scanAgreesWithEncodingJSON(body string) string {
	tm, lift, ok := scanRide([]byte(body))
	if !ok {
		return ""
	}
	var r LiftRide
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return fmt.Sprintf("%q: read as time %d, liftID %d; encoding/json: %v", body, tm, lift, err)
	}
	if r.Time == nil || r.LiftID == nil || *r.Time != tm || *r.LiftID != lift {
		return fmt.Sprintf("%q: read as time %d, liftID %d; encoding/json: %+v", body, tm, lift, r)
	}
	return ""
}

// TestTheRideBodyClientsSendIsReadDirectly: the common body takes the
// direct path (a regression here would not change any answer, only the
// CPU a POST costs).
func TestTheRideBodyClientsSendIsReadDirectly(t *testing.T) {
	for _, body := range rideBodies[:6] {
		if _, _, ok := scanRide([]byte(body)); !ok {
			t.Errorf("%s: not read directly", body)
		}
	}
}

// TestTheCommonRequestsSkipTheGeneratedRoutes: the POST every client
// sends and the three queries with their parameters are answered by the
// direct routes themselves; a ride body they do not read goes to the
// generated route with its bytes intact.
func TestTheCommonRequestsSkipTheGeneratedRoutes(t *testing.T) {
	var asked []string
	h := fixtureHandlers(&asked)
	var generatedGot []string
	router := checkedRouter{ServeMux: http.NewServeMux(), placed: map[string]bool{}, inFront: direct{h: h, errs: errorWriter{log: slog.New(slog.DiscardHandler)}}.routes()}
	for pattern := range router.inFront {
		router.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			generatedGot = append(generatedGot, string(b))
			w.WriteHeader(http.StatusTeapot)
		})
	}
	send := func(method, target, body string) int {
		w := httptest.NewRecorder()
		router.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
		return w.Code
	}
	for _, c := range []struct{ method, target, body string }{
		{http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`},
		{http.MethodGet, "/skiers/1/seasons/2024/days/1/skiers/2", ""},
		{http.MethodGet, "/skiers/2/vertical?resort=1&season=2024", ""},
		{http.MethodGet, "/resorts/1/seasons/2024/day/1/skiers", ""},
	} {
		if code := send(c.method, c.target, c.body); code == http.StatusTeapot {
			t.Errorf("%s %s went to the generated route", c.method, c.target)
		}
	}
	if len(asked) != 4 {
		t.Errorf("the use cases were asked %q; want the ride and the three queries", asked)
	}
	if code := send(http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21,"x":1}`); code != http.StatusTeapot || len(generatedGot) != 1 || generatedGot[0] != `{"time":217,"liftID":21,"x":1}` {
		t.Errorf("other body: status %d, generated route got %q; want it handed on whole", code, generatedGot)
	}
}

// TestTheCommonRequestsAreRoutedWithoutTheMux: the POST every client sends
// and the three queries, their paths in plain form, are answered before
// the ServeMux (whose routes here answer 418) and recorded under their
// route; any other form of them goes to the mux, which answers it.
func TestTheCommonRequestsAreRoutedWithoutTheMux(t *testing.T) {
	var asked []string
	mux := http.NewServeMux()
	for _, pattern := range append(directPatterns, "/") {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	}
	h := &instrumented{mux: mux, direct: &direct{h: fixtureHandlers(&asked), errs: errorWriter{log: slog.New(slog.DiscardHandler)}}, stats: askedStats{&asked}}
	for _, c := range []struct {
		method, target, body string
		fast                 bool
	}{
		{http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`, true},
		{http.MethodGet, "/skiers/1/seasons/2024/days/1/skiers/2", "", true},
		{http.MethodGet, "/skiers/2/vertical?resort=1&season=2024", "", true},
		{http.MethodGet, "/resorts/1/seasons/2024/day/1/skiers", "", true},
		{http.MethodPost, "/skiers/-4/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`, true}, // the domain refuses it
		{http.MethodHead, "/resorts/1/seasons/2024/day/1/skiers", "", false},
		{http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2/", `{"time":217,"liftID":21}`, false},
		{http.MethodPost, "/skiers/01/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`, false},
		{http.MethodPost, "/skiers/%31/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`, false},
		{http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21,"x":1}`, false}, // handed on
		{http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2147483648", `{"time":217,"liftID":21}`, false},
		{http.MethodGet, "/skiers/2/vertical?resort=%zz", "", false},
		{http.MethodGet, "/skiers/2/vertical", "", false},
		{http.MethodGet, "/skiers/2/vertical/x", "", false},
		{http.MethodGet, "/resorts/1/seasons/2024/days/1/skiers", "", false},
	} {
		asked = nil
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, c.target, strings.NewReader(c.body)))
		if fast := w.Code != http.StatusTeapot; fast != c.fast {
			t.Errorf("%s %s: answered %d before the mux: %v; want %v", c.method, c.target, w.Code, fast, c.fast)
			continue
		}
		if !c.fast {
			continue
		}
		want := ""
		for _, pattern := range directPatterns {
			if method, path, _ := strings.Cut(pattern, " "); method == c.method && pathParam.ReplaceAllString(path, "x") == regexp.MustCompile(`/-?\d+`).ReplaceAllString(strings.Split(c.target, "?")[0], "/x") {
				want = fmt.Sprintf("stats %s %s %d", method, path, w.Code)
			}
		}
		if len(asked) == 0 || asked[len(asked)-1] != want {
			t.Errorf("%s %s: recorded %q; want %q", c.method, c.target, asked, want)
		}
	}
}

// routeRequest is one request to a direct route's path in the comparison
// below: the route's pattern with its wildcards filled in order by ids.
type routeRequest struct {
	pattern  string
	ids      [4]string
	query    string
	body     string
	chunked  bool
	encoding string
}

var directPatterns = []string{writeRidePattern, dayVerticalPattern, resortTotalsPattern, resortSkiersPattern}

func (q routeRequest) new() *http.Request {
	method, path, _ := strings.Cut(q.pattern, " ")
	i := 0
	path = pathParam.ReplaceAllStringFunc(path, func(string) string {
		i++
		return url.PathEscape(q.ids[i-1])
	})
	r := httptest.NewRequest(method, "http://skidata.test"+path, strings.NewReader(q.body))
	r.URL.RawQuery = q.query // set here: a fuzzed query need not be one NewRequest accepts
	r.RequestURI = r.URL.RequestURI()
	if q.body == "" {
		r.Body, r.ContentLength = http.NoBody, 0
	}
	r.Header.Set("Content-Type", "application/json")
	if q.encoding != "" {
		r.Header.Set("Content-Encoding", q.encoding)
	}
	if q.chunked {
		r.ContentLength = -1
	}
	return r
}

// answerOf sends q through h (the size limit and statistics in front, as
// served) and describes the answer and what the use cases were asked.
func answerOf(h http.Handler, q routeRequest, asked *[]string) string {
	*asked = nil
	w := httptest.NewRecorder()
	h.ServeHTTP(w, q.new())
	return fmt.Sprintf("%d %q Content-Type=%q Retry-After=%q Allow=%q Accept-Encoding=%q Connection=%q asked=%v",
		w.Code, w.Body.String(), w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), w.Header().Get("Allow"),
		w.Header().Get("Accept-Encoding"), w.Header().Get("Connection"), *asked)
}

// fixtureQueries answers every query from its arguments, so that an
// argument read differently shows in the answer, and as the catalogue would
// for resort 404.
type fixtureQueries struct {
	ports.RideQueries // the rest: not reached through the direct routes' paths
	asked             *[]string
}

func (f fixtureQueries) ask(format string, args ...any) error {
	*f.asked = append(*f.asked, fmt.Sprintf(format, args...))
	switch args := fmt.Sprint(args...); {
	case strings.Contains(args, "404"):
		return domain.NotFound("resort 404 is not in the catalogue")
	case strings.Contains(args, "503"):
		return domain.Unavailable("the store is down")
	}
	return nil
}

func (f fixtureQueries) SkierDayVertical(_ context.Context, resort domain.ResortID, season string, day int, skier domain.SkierID) (int64, error) {
	return int64(resort)*1_000_000 + int64(day)*1000 + int64(skier), f.ask("day vertical %d %q %d %d", resort, season, day, skier)
}

func (f fixtureQueries) SkierResortTotals(_ context.Context, skier domain.SkierID, resorts []domain.ResortID, seasons []string) ([]domain.SeasonVertical, error) {
	return []domain.SeasonVertical{{SeasonID: strings.Join(seasons, "+"), TotalVert: int64(skier) + int64(len(resorts))}},
		f.ask("totals %d %v %q", skier, resorts, seasons)
}

func (f fixtureQueries) ResortDaySkiers(_ context.Context, resort domain.ResortID, season string, day int) (ports.ResortDaySkiers, error) {
	return ports.ResortDaySkiers{ResortName: fmt.Sprintf("resort %d", resort), NumSkiers: day}, f.ask("skiers %d %q %d", resort, season, day)
}

func fixtureHandlers(asked *[]string) *Handlers {
	return &Handlers{
		Ingest: ingestFunc(func(ctx context.Context, r domain.LiftRide) error {
			*asked = append(*asked, "ride "+r.Key()+" client="+ports.ClientOf(ctx))
			switch r.ResortID() {
			case 404:
				return domain.NotFound("resort 404 is not in the catalogue")
			case 429:
				return domain.Overloaded("slow down")
			case 503:
				return domain.Unavailable("the queue is down")
			}
			return nil
		}),
		Queries:       fixtureQueries{asked: asked},
		Stats:         askedStats{asked},
		ClientAddress: func(r *http.Request) string { return "client-of-" + r.RemoteAddr },
	}
}

// askedStats adds each request the statistics record to what was asked,
// so that the comparisons below hold the statistics to the mux's too.
type askedStats struct{ asked *[]string }

func (s askedStats) Observe(route, method string, status int, _ time.Duration) {
	*s.asked = append(*s.asked, fmt.Sprintf("stats %s %s %d", method, route, status))
}

func (askedStats) Snapshot() []ports.EndpointStat { return nil }

// bothHandlers is the served handler with the direct routes and without.
func bothHandlers(asked *[]string) (withDirect, generatedOnly http.Handler) {
	h, log := fixtureHandlers(asked), slog.New(slog.DiscardHandler)
	return newHandler(h, log, true), newHandler(h, log, false)
}

// TestTheDirectRoutesAnswerAsTheGeneratedRoutes: for the bodies of the
// decoding tests, ids in and out of range, odd days and seasons, queries
// with and without their parameters, a chunked body and Content-Encodings,
// the served handler answers exactly as the generated routes alone would,
// and asks the use cases the same questions.
func TestTheDirectRoutesAnswerAsTheGeneratedRoutes(t *testing.T) {
	var asked []string
	withDirect, generatedOnly := bothHandlers(&asked)
	for _, q := range directRouteCases() {
		if got, want := answerOf(withDirect, q, &asked), answerOf(generatedOnly, q, &asked); got != want {
			t.Errorf("%+v:\n direct:    %s\n generated: %s", q, got, want)
		}
	}
}

// directRouteCases are the requests the comparisons of the direct routes
// send: the bodies of the decoding tests, ids in and out of range, odd
// days and seasons, queries with and without their parameters, a chunked
// body and Content-Encodings.
func directRouteCases() []routeRequest {
	ride := routeRequest{pattern: writeRidePattern, ids: [4]string{"1", "2024", "1", "2"}, body: `{"time":217,"liftID":21}`}
	var cases []routeRequest
	for _, body := range rideBodies {
		q := ride
		q.body = body
		cases = append(cases, q)
	}
	for _, enc := range []string{"gzip", "identity", "IDENTITY, gzip"} {
		q := ride
		q.encoding = enc
		cases = append(cases, q)
	}
	chunked := ride
	chunked.chunked = true
	cases = append(cases, chunked)
	idSets := [][4]string{
		{"1", "2024", "1", "2"}, {"404", "2024", "1", "2"}, {"429", "2024", "1", "2"}, {"503", "2024", "1", "2"}, {"0", "2024", "1", "2"}, {"-4", "2024", "1", "2"},
		{"2147483647", "2024", "1", "2"}, {"2147483648", "2024", "1", "2"}, {"1", "2024", "1", "99999999999"},
		{"1", "2024", "1", "-2147483648"}, {"01", "2024", "1", "2"}, {"+1", "2024", "1", "2"}, {"x", "2024", "1", "2"},
		{"1", "24", "1", "2"}, {"1", "2024,2025", "1", "2"}, {"1", "2024", "0", "2"}, {"1", "2024", "367", "2"},
		{"1", "2024", "1,2", "2"}, {"1", "2024", "x", "2"}, {"1", "2024", "", "2"}, {"1", "2024", "1", ""},
		{"1", "2147483648", "1", "2"}, {"1", "2024", "2147483648", "2"},
	}
	for _, pattern := range directPatterns {
		for _, ids := range idSets {
			q := ride
			q.pattern, q.ids = pattern, ids
			if pattern != writeRidePattern {
				q.body = ""
			}
			if pattern == resortTotalsPattern {
				q.query = "resort=1&season=2024"
			}
			cases = append(cases, q)
		}
	}
	for _, query := range []string{"", "resort=1", "resort=", "resort=1&resort=2&resort=1", "resort=404", "resort=x", "resort=1,2",
		"season=2024", "resort=1&season=", "resort=1&season=2024&season=2025", "RESORT=1", "resort=1%2C2", "resort=%zz", "resort=1;season=2"} {
		cases = append(cases, routeRequest{pattern: resortTotalsPattern, ids: [4]string{"7"}, query: query})
	}
	return cases
}

// addDirectRouteSeeds seeds a fuzz target whose inputs are a direct
// route's index, its four ids, a query and a body.
func addDirectRouteSeeds(f *testing.F) {
	for i := range directPatterns {
		f.Add(uint8(i), "1", "2024", "1", "2", "resort=1&season=2024", `{"time":217,"liftID":21}`)
	}
	for _, body := range rideBodies {
		f.Add(uint8(0), "1", "2024", "1", "2", "", body)
	}
	f.Add(uint8(0), "404", "2024", "1", "2", "", `{"time":217,"liftID":21}`)
	f.Add(uint8(1), "1", "2024", "1", "2147483648", "", "")
	f.Add(uint8(2), "7", "", "", "", "resort=1&resort=404&season=", "")
	f.Add(uint8(3), "1", "1999", "366", "", "", "")
}

func FuzzTheDirectRoutesAnswerAsTheGeneratedRoutes(f *testing.F) {
	addDirectRouteSeeds(f)
	var asked []string
	withDirect, generatedOnly := bothHandlers(&asked)
	f.Fuzz(func(t *testing.T, route uint8, a, b, c, d, query, body string) {
		q := routeRequest{pattern: directPatterns[int(route)%len(directPatterns)], ids: [4]string{a, b, c, d}, query: query, body: body}
		if got, want := answerOf(withDirect, q, &asked), answerOf(generatedOnly, q, &asked); got != want {
			t.Errorf("%+v:\n direct:    %s\n generated: %s", q, got, want)
		}
		if msg := scanAgreesWithEncodingJSON(body); msg != "" {
			t.Error(msg)
		}
	})
}

// TestTotalsQueryReadsWhatURLQueryReads: the season-totals route's own
// reading of its query gives the values URL.Query gives, absent and empty
// ones included.
func TestTotalsQueryReadsWhatURLQueryReads(t *testing.T) {
	for _, raw := range []string{"", "resort=1", "resort=1&resort=2&season=2024", "season=&resort=", "resort", "resort=1&&season=2024&",
		"x=1&resort=a=b", "resort=1%2C2", "resort=1+2", "RESORT=1", "season=2024", "resort=1&season=2024&season=2025&resort=1"} {
		r := httptest.NewRequest(http.MethodGet, "/skiers/1/vertical", nil)
		r.URL.RawQuery = raw
		resorts, seasons := totalsQuery(r)
		query := r.URL.Query()
		if want := query["resort"]; fmt.Sprintf("%q %v", resorts, resorts == nil) != fmt.Sprintf("%q %v", want, want == nil) {
			t.Errorf("%q: resorts %q; URL.Query reads %q", raw, resorts, want)
		}
		if want := query["season"]; fmt.Sprintf("%q %v", seasons, seasons == nil) != fmt.Sprintf("%q %v", want, want == nil) {
			t.Errorf("%q: seasons %q; URL.Query reads %q", raw, seasons, want)
		}
	}
}

// TestAppendTotalsWritesWhatEncodingJSONWrites: the totals encoded by hand
// are byte for byte encoding/json's; totals it would escape are left to
// it.
func TestAppendTotalsWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, seasons := range [][]string{{"2024"}, {"2023", "2024"}, {""}, {"1999-2000", "a_b.c"}, {}, {"<2024>"}, {"2024", "é"}, {`"`}, {"a b"}} {
		totals := GetSkierResortTotals200JSONResponse{Resorts: []SeasonVertical{}}
		for i, s := range seasons {
			totals.Resorts = append(totals.Resorts, SeasonVertical{SeasonID: s, TotalVert: int64(i*1000 - 7)})
		}
		var want strings.Builder
		if err := json.NewEncoder(&want).Encode(totals); err != nil {
			t.Fatal(err)
		}
		got, plain := appendTotals(nil, totals)
		switch {
		case plain && string(got) != want.String():
			t.Errorf("%q: wrote %s; encoding/json writes %s", seasons, got, want.String())
		case !plain && !strings.ContainsAny(strings.Join(seasons, ""), `<>"é `):
			t.Errorf("%q: left to encoding/json; want it written by hand", seasons)
		}
	}
}
