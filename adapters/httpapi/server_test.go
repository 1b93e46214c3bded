package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

type ingestFunc func(context.Context, domain.LiftRide) error

func (f ingestFunc) AddRide(ctx context.Context, r domain.LiftRide) error { return f(ctx, r) }

type statsRec struct{ routes []string }

func (s *statsRec) Observe(route, method string, _ int, _ time.Duration) {
	s.routes = append(s.routes, method+" "+route)
}
func (s *statsRec) Snapshot() []ports.EndpointStat { return nil }

func serve(t *testing.T, ingest ingestFunc, stats *statsRec) *httptest.Server {
	t.Helper()
	h := NewHandler(&Handlers{Ingest: ingest, Stats: stats}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func postRide(t *testing.T, srv *httptest.Server) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", "application/json", strings.NewReader(`{"time":1,"liftID":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestIngestErrorsMapToStatus(t *testing.T) {
	cases := []struct {
		err        error
		status     int
		retryAfter bool
		inBody     string
	}{
		{domain.Unavailable("the ride queue is full"), 503, true, "the ride queue is full"},
		{&domain.Error{Kind: domain.ErrOverloaded, Msg: "slow down"}, 429, true, "slow down"},
		{domain.NotFound("resort 9 does not exist"), 404, false, "resort 9 does not exist"},
		{domain.Invalid("bad"), 400, false, "bad"},
		{errors.New("secret connection string"), 500, false, "internal error"},
	}
	for _, c := range cases {
		t.Run(c.err.Error(), func(t *testing.T) {
			srv := serve(t, func(context.Context, domain.LiftRide) error { return c.err }, &statsRec{})
			resp, body := postRide(t, srv)
			if resp.StatusCode != c.status {
				t.Errorf("status %d; want %d", resp.StatusCode, c.status)
			}
			if got := resp.Header.Get("Retry-After") != ""; got != c.retryAfter {
				t.Errorf("Retry-After present = %v; want %v", got, c.retryAfter)
			}
			if !strings.Contains(body, c.inBody) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("body %q (%s); want JSON saying %q", body, resp.Header.Get("Content-Type"), c.inBody)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("an internal error leaked its cause to the caller: %s", body)
			}
		})
	}
}

func TestAcceptedRideReachesIngestValidated(t *testing.T) {
	var got domain.LiftRide
	srv := serve(t, func(_ context.Context, r domain.LiftRide) error { got = r; return nil }, &statsRec{})
	resp, _ := postRide(t, srv)
	want := domain.MustLiftRide(1, "2024", 1, 2, 1, 2)
	if resp.StatusCode != 201 || got != want {
		t.Errorf("status %d, ingested %+v; want 201 and %+v", resp.StatusCode, got, want)
	}
}

func TestStatsRecordRouteTemplateNotPath(t *testing.T) {
	stats := &statsRec{}
	srv := serve(t, func(context.Context, domain.LiftRide) error { return nil }, stats)
	postRide(t, srv)
	resp, err := http.Get(srv.URL + "/nothing/here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := "POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}"
	if len(stats.routes) != 1 || stats.routes[0] != want {
		t.Errorf("observed %v; want only %q (unmatched paths are not recorded)", stats.routes, want)
	}
}
