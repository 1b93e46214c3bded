package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// The internals a store or queue error may carry, none of which a client
// may see.
var internals = []string{"s_adopted_skierTable", "dynamodb.eu-west-1.amazonaws.com", "https://", "amqp://", "hunter2", "10.0.7.12", "pq:", "operation error DynamoDB"}

// leakyQueries fails every query with an error full of internals.
type leakyQueries struct {
	ports.RideQueries
	err error
}

func (q leakyQueries) SkierResortTotals(context.Context, domain.SkierID, []domain.ResortID, []string) ([]domain.SeasonVertical, error) {
	return nil, fmt.Errorf("season totals of skier 5 at resort 1: %w", q.err)
}

func (q leakyQueries) SkierDayVertical(context.Context, domain.ResortID, string, int, domain.SkierID) (int64, error) {
	return 0, fmt.Errorf("day vertical of skier 5: %w", q.err)
}

func TestErrorBodiesCarryNoInternalsAndTheCauseIsLogged(t *testing.T) {
	causes := []error{
		fmt.Errorf("%w: SkierSeasonVerticals: query s_adopted_skierTable: operation error DynamoDB: Query, https response error StatusCode: 500, host https://dynamodb.eu-west-1.amazonaws.com", domain.ErrUnavailable),
		domain.Unavailable("redis at 10.0.7.12:6379 does not answer: dial tcp 10.0.7.12:6379: connection refused"),
		fmt.Errorf("%w: rabbitmq broker at amqp://user:hunter2@10.0.7.12:5672/ is unreachable", domain.ErrUnavailable),
		errors.New("pq: password authentication failed for user skidata at 10.0.7.12 (https://x)"),
	}
	for _, cause := range causes {
		var logs bytes.Buffer
		h := NewHandler(&Handlers{Queries: leakyQueries{err: cause}, Stats: &statsRec{}}, slog.New(slog.NewTextHandler(&logs, nil)))
		for _, path := range []string{"/skiers/5/vertical?resort=1", "/skiers/1/seasons/2024/days/1/skiers/5"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			body := rec.Body.String()
			for _, secret := range internals {
				if strings.Contains(body, secret) {
					t.Errorf("GET %s with cause %q: body %s names %q", path, cause, body, secret)
				}
			}
			var m ResponseMsg
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || !strings.Contains(m.Message, "retry") && !strings.Contains(m.Message, "server log") {
				t.Errorf("GET %s: body %s does not say what the client can do", path, body)
			}
		}
		if !strings.Contains(logs.String(), "10.0.7.12") && !strings.Contains(logs.String(), "s_adopted_skierTable") {
			t.Errorf("the cause %q is not in the log:\n%s", cause, logs.String())
		}
		if strings.Contains(logs.String(), "hunter2") {
			t.Errorf("the log shows a password:\n%s", logs.String())
		}
	}
}

func TestUnavailableIsAFixedMessagePerDependency(t *testing.T) {
	cause := fmt.Errorf("%w: query s_adopted_skierTable", domain.ErrUnavailable)
	h := NewHandler(&Handlers{Queries: leakyQueries{err: cause}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/skiers/5/vertical?resort=1", nil))
	want := fmt.Sprintf(`{"message":"the ride store is unavailable; retry after %d s"}`, RetryAfterSeconds)
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("GET = %d %s; want 503 %s", rec.Code, rec.Body.String(), want)
	}
	srv := serve(t, func(context.Context, domain.LiftRide) error {
		return fmt.Errorf("%w: publish ride to amqp://u:hunter2@h/: channel closed", domain.ErrUnavailable)
	}, &statsRec{})
	resp, body := postRide(t, srv)
	want = fmt.Sprintf(`{"message":"the ride queue cannot take the ride now; retry after %d s"}`, RetryAfterSeconds)
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(body) != want {
		t.Errorf("POST = %d %s; want 503 %s", resp.StatusCode, body, want)
	}
}

// slowQueries waits on the store until the request's deadline.
type slowQueries struct{ ports.RideQueries }

func (slowQueries) SkierDayVertical(ctx context.Context, _ domain.ResortID, _ string, _ int, _ domain.SkierID) (int64, error) {
	<-ctx.Done()
	return 0, fmt.Errorf("day vertical of skier 5: %w", ctx.Err())
}

func TestRequestPastItsDeadlineIs503(t *testing.T) {
	h := NewHandler(&Handlers{Queries: slowQueries{}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/skiers/1/seasons/2024/days/1/skiers/5", nil).WithContext(ctx))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "retry after") || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a request past its deadline = %d %s; want 503 with Retry-After", rec.Code, rec.Body.String())
	}
}

type fixedHealth struct{ r ports.Readiness }

func (h fixedHealth) Ready(context.Context) ports.Readiness { return h.r }

func TestReadyzStatusIsOkDegradedOrUnavailable(t *testing.T) {
	for _, c := range []struct {
		r      ports.Readiness
		status int
		want   string
	}{
		{ports.Readiness{Ready: true, Checks: map[string]string{"postgres": "ok"}}, 200, `"status":"ok"`},
		{ports.Readiness{Ready: true, Degraded: true, Checks: map[string]string{"postgres": "ok", "redis": "unavailable"}}, 200, `"status":"degraded"`},
		{ports.Readiness{Checks: map[string]string{"postgres": "unavailable"}}, 503, `"status":"unavailable"`},
	} {
		h := NewHandler(&Handlers{Health: fixedHealth{c.r}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("readyz for %+v = %d %s; want %d with %s", c.r, rec.Code, rec.Body.String(), c.status, c.want)
		}
	}
}

// TestTooManyRequestsCarriesARateLimitHeader: a 429 keeps Retry-After
// (whole seconds, HTTP's) and adds the IETF draft's RateLimit field
// (draft-ietf-httpapi-ratelimit-headers): no quota left in the "ingest"
// policy, reset within the second. No other answer carries it.
func TestTooManyRequestsCarriesARateLimitHeader(t *testing.T) {
	srv := serve(t, func(context.Context, domain.LiftRide) error {
		return domain.Overloaded("this server takes at most 2000 rides per second now")
	}, &statsRec{})
	resp, _ := postRide(t, srv)
	want := fmt.Sprintf(`"ingest";r=0;t=%d`, RetryAfterSeconds)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("RateLimit") != want || resp.Header.Get("Retry-After") != fmt.Sprint(RetryAfterSeconds) {
		t.Errorf("429: RateLimit %q, Retry-After %q; want %q and %d", resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"), want, RetryAfterSeconds)
	}
	srv = serve(t, func(context.Context, domain.LiftRide) error { return domain.Unavailable("queue full") }, &statsRec{})
	if resp, _ := postRide(t, srv); resp.Header.Get("RateLimit") != "" {
		t.Errorf("a 503 carries RateLimit %q; the rate limit is not why it was refused", resp.Header.Get("RateLimit"))
	}
}
