package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/skidata/skidata/ports"
)

type depthFunc func(context.Context) (ports.QueueDepth, error)

func (f depthFunc) Depth(ctx context.Context) (ports.QueueDepth, error) { return f(ctx) }

func TestReadinessSaysUnavailableWithoutInternalsAndLogsTheCause(t *testing.T) {
	var logs bytes.Buffer
	cause := errors.New("dial tcp 10.0.7.12:5432: password authentication failed for user skidata (postgres://skidata:hunter2@db.internal:5432/rides)")
	h := NewHealth(
		depthFunc(func(context.Context) (ports.QueueDepth, error) {
			return ports.QueueDepth{}, errors.New("amqp://u:hunter2@mq.internal:5672/ refused")
		}),
		slog.New(slog.NewTextHandler(&logs, nil)),
		[]Probe{
			{Name: "postgres", Check: func(context.Context) error { return cause }},
			{Name: "rabbitmq", Check: func(context.Context) error { return nil }},
		})
	r := h.Ready(context.Background())
	if r.Ready {
		t.Error("ready with the store down")
	}
	want := map[string]string{"postgres": "unavailable", "rabbitmq": "ok", "queue-depth": "unavailable"}
	for dep, state := range want {
		if r.Checks[dep] != state {
			t.Errorf("check %s = %q; want %q", dep, r.Checks[dep], state)
		}
	}
	for dep, state := range r.Checks {
		for _, internal := range []string{"10.0.7.12", "hunter2", "db.internal", "mq.internal", "://", "password"} {
			if strings.Contains(state, internal) {
				t.Errorf("check %s = %q names %q", dep, state, internal)
			}
		}
	}
	if !strings.Contains(logs.String(), "db.internal") || !strings.Contains(logs.String(), "mq.internal") {
		t.Errorf("the causes are not in the log:\n%s", logs.String())
	}
}

func TestReadinessWithTheCacheDownIsDegradedNotUnavailable(t *testing.T) {
	var logs bytes.Buffer
	h := NewHealth(
		depthFunc(func(context.Context) (ports.QueueDepth, error) { return ports.QueueDepth{Rides: 3, Messages: 1}, nil }),
		slog.New(slog.NewTextHandler(&logs, nil)),
		[]Probe{{Name: "postgres", Check: func(context.Context) error { return nil }}, {}},
		Probe{Name: "redis", Check: func(context.Context) error { return errors.New("redis at cache.internal:6379 does not answer") }})
	r := h.Ready(context.Background())
	if !r.Ready || !r.Degraded {
		t.Errorf("ready %v, degraded %v; want ready (queries fall back to the store) but degraded", r.Ready, r.Degraded)
	}
	if r.Checks["redis"] != CheckUnavailable || r.Checks["postgres"] != CheckOK || r.QueueDepth != 3 {
		t.Errorf("readiness = %+v; want redis unavailable, postgres ok, depth 3", r)
	}
	if !strings.Contains(logs.String(), "cache.internal") {
		t.Errorf("the cause is not in the log:\n%s", logs.String())
	}
}
