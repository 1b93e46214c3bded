package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// TestTheClientOfARideIsTheConnectionsOrTheLoadBalancers: ingest learns
// who sent a ride from the peer address, or behind a load balancer from
// the last X-Forwarded-For entry (the one the balancer appended, not what
// the client claimed before it); with no ClientAddress it learns nothing.
func TestTheClientOfARideIsTheConnectionsOrTheLoadBalancers(t *testing.T) {
	for _, c := range []struct {
		name    string
		address func(*http.Request) string
		xff     []string
		want    string
	}{
		{"none", nil, nil, ""},
		{"remote", RemoteAddress, []string{"203.0.113.5"}, "127.0.0.1"},
		{"forwarded", ForwardedAddress, []string{"203.0.113.5, 198.51.100.7"}, "198.51.100.7"},
		{"forwarded, two headers", ForwardedAddress, []string{"203.0.113.5", "198.51.100.8"}, "198.51.100.8"},
		{"forwarded, no header", ForwardedAddress, nil, "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			h := NewHandler(&Handlers{Ingest: ingestFunc(func(ctx context.Context, _ domain.LiftRide) error {
				got = ports.ClientOf(ctx)
				return nil
			}), Stats: &statsRec{}, ClientAddress: c.address}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", strings.NewReader(`{"time":1,"liftID":2}`))
			req.Header.Set("Content-Type", "application/json")
			for _, v := range c.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || got != c.want {
				t.Errorf("status %d, client %q; want 201 and %q", resp.StatusCode, got, c.want)
			}
		})
	}
}
