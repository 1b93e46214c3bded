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
	"strings"
	"testing"

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

// TestTheCommonRideSkipsTheGeneratedRoute: the POST every client sends is
// answered by the ride route itself; a body it does not read goes to the
// generated route with its bytes intact.
func TestTheCommonRideSkipsTheGeneratedRoute(t *testing.T) {
	var took []domain.LiftRide
	var generatedGot []string
	rr := rideRoute{
		handlers: &Handlers{Ingest: ingestFunc(func(_ context.Context, r domain.LiftRide) error { took = append(took, r); return nil })},
		generated: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			generatedGot = append(generatedGot, string(b))
			w.WriteHeader(http.StatusTeapot)
		}),
		errs: errorWriter{log: slog.New(slog.DiscardHandler)},
	}
	mux := http.NewServeMux()
	mux.Handle(writeRidePattern, rr)
	post := func(body string) int {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/2", strings.NewReader(body)))
		return w.Code
	}
	if code := post(`{"time":217,"liftID":21}`); code != http.StatusCreated || len(took) != 1 || len(generatedGot) != 0 {
		t.Errorf("common ride: status %d, %d rides ingested, generated route called with %q; want 201, 1, none", code, len(took), generatedGot)
	}
	if code := post(`{"time":217,"liftID":21,"x":1}`); code != http.StatusTeapot || len(generatedGot) != 1 || generatedGot[0] != `{"time":217,"liftID":21,"x":1}` {
		t.Errorf("other body: status %d, generated route got %q; want it handed on whole", code, generatedGot)
	}
}

// rideRequest is one request to the ride route in the comparison below.
type rideRequest struct {
	resort, season, day, skier string
	body                       string
	chunked                    bool
	encoding                   string
}

func (q rideRequest) new() *http.Request {
	path := "/skiers/" + url.PathEscape(q.resort) + "/seasons/" + url.PathEscape(q.season) + "/days/" + url.PathEscape(q.day) + "/skiers/" + url.PathEscape(q.skier)
	r := httptest.NewRequest(http.MethodPost, "http://skidata.test"+path, strings.NewReader(q.body))
	r.Header.Set("Content-Type", "application/json")
	if q.encoding != "" {
		r.Header.Set("Content-Encoding", q.encoding)
	}
	if q.chunked {
		r.ContentLength = -1
	}
	return r
}

// answerOf sends q through h (in front of the size limit and statistics,
// as served) and describes the answer and the ride ingest was given.
func answerOf(h http.Handler, q rideRequest, ingested *[]string) string {
	*ingested = nil
	w := httptest.NewRecorder()
	h.ServeHTTP(w, q.new())
	return fmt.Sprintf("%d %q Content-Type=%q Retry-After=%q Allow=%q Accept-Encoding=%q Connection=%q ingested=%v",
		w.Code, w.Body.String(), w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), w.Header().Get("Allow"),
		w.Header().Get("Accept-Encoding"), w.Header().Get("Connection"), *ingested)
}

// bothRoutes is the served handler with the ride route and without it,
// over one ingester that records what it is given and answers as the
// catalogue would for resort 404 and the rate limit for resort 429.
func bothRoutes(ingested *[]string) (direct, generated http.Handler) {
	h := &Handlers{
		Ingest: ingestFunc(func(ctx context.Context, r domain.LiftRide) error {
			*ingested = append(*ingested, r.Key()+" client="+ports.ClientOf(ctx))
			switch r.ResortID() {
			case 404:
				return domain.NotFound("resort 404 is not in the catalogue")
			case 429:
				return domain.Overloaded("slow down")
			}
			return nil
		}),
		Stats:         &statsRec{},
		ClientAddress: func(r *http.Request) string { return "client-of-" + r.RemoteAddr },
	}
	log := slog.New(slog.DiscardHandler)
	return newHandler(h, log, true), newHandler(h, log, false)
}

// TestTheRideRouteAnswersAsTheGeneratedRoute: for the bodies of the
// decoding tests, ids in and out of range, odd days and seasons, a chunked
// body and Content-Encodings, the served handler answers exactly as the
// generated route alone would, and hands ingest the same ride.
func TestTheRideRouteAnswersAsTheGeneratedRoute(t *testing.T) {
	var ingested []string
	direct, generated := bothRoutes(&ingested)
	ok := rideRequest{resort: "1", season: "2024", day: "1", skier: "2", body: `{"time":217,"liftID":21}`}
	var cases []rideRequest
	for _, body := range rideBodies {
		q := ok
		q.body = body
		cases = append(cases, q)
	}
	for _, ids := range [][4]string{
		{"404", "2024", "1", "2"}, {"429", "2024", "1", "2"}, {"0", "2024", "1", "2"}, {"-4", "2024", "1", "2"},
		{"2147483647", "2024", "1", "2"}, {"2147483648", "2024", "1", "2"}, {"1", "2024", "1", "99999999999"},
		{"1", "2024", "1", "-2147483648"}, {"01", "2024", "1", "2"}, {"+1", "2024", "1", "2"}, {"x", "2024", "1", "2"},
		{"1", "24", "1", "2"}, {"1", "2024,2025", "1", "2"}, {"1", "2024", "0", "2"}, {"1", "2024", "367", "2"},
		{"1", "2024", "1,2", "2"}, {"1", "2024", "x", "2"}, {"1", "2024", "", "2"}, {"1", "2024", "1", ""},
	} {
		q := ok
		q.resort, q.season, q.day, q.skier = ids[0], ids[1], ids[2], ids[3]
		cases = append(cases, q)
	}
	for _, enc := range []string{"gzip", "identity", "IDENTITY, gzip"} {
		q := ok
		q.encoding = enc
		cases = append(cases, q)
	}
	chunked := ok
	chunked.chunked = true
	cases = append(cases, chunked)
	for _, q := range cases {
		if got, want := answerOf(direct, q, &ingested), answerOf(generated, q, &ingested); got != want {
			t.Errorf("%+v:\n ride route: %s\n generated:  %s", q, got, want)
		}
	}
}

func FuzzTheRideRouteAnswersAsTheGeneratedRoute(f *testing.F) {
	for _, body := range rideBodies {
		f.Add("1", "2024", "1", "2", body)
	}
	f.Add("404", "2024", "1", "2", `{"time":217,"liftID":21}`)
	f.Add("1", "2024", "1", "2147483648", `{"time":217,"liftID":21}`)
	f.Add("1", "1999", "366", "7", `{"liftID":1000,"time":1439}`)
	var ingested []string
	direct, generated := bothRoutes(&ingested)
	f.Fuzz(func(t *testing.T, resort, season, day, skier, body string) {
		q := rideRequest{resort: resort, season: season, day: day, skier: skier, body: body}
		if got, want := answerOf(direct, q, &ingested), answerOf(generated, q, &ingested); got != want {
			t.Errorf("%+v:\n ride route: %s\n generated:  %s", q, got, want)
		}
		if msg := scanAgreesWithEncodingJSON(body); msg != "" {
			t.Error(msg)
		}
	})
}
