package compose

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/breaker"
	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/adapters/prom"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/ports"
)

// The provider sets the injectors (inject.go) are built from. The store,
// the queue and the cache are opened through the registry (registry.go),
// which picks the adapter the configuration names at run time; wire then
// takes the ports out of what was opened.

// commonSet: logs, metrics, the store, the queue, the cache and readiness.
var commonSet = wire.NewSet(
	NewLogger,
	prom.New, wire.Bind(new(ports.Metrics), new(*prom.Metrics)),
	wire.Struct(new(Deps), "Config", "Metrics", "Region", "Log"),
	OpenStore, wire.FieldsOf(new(OpenedStore), "Rides", "Resorts"),
	OpenQueue, wire.FieldsOf(new(OpenedQueue), "Queue"),
	wire.Bind(new(ports.Subscriber), new(Queue)), wire.Bind(new(ports.QueueStats), new(Queue)),
	OpenCache, wire.FieldsOf(new(OpenedCache), "Cache"),
	newHealth,
	app.NewEndpointStats,
)

// apiSet takes rides and answers queries: ingest behind admission control
// and the circuit breaker, queries through the cache, the whole HTTP API.
var apiSet = wire.NewSet(
	wire.FieldsOf(new(Config), "Catalog", "Admission", "Query"),
	app.NewCatalog,
	publisherOf, groupCommitOf, app.NewIngest,
	app.NewQuery,
	newAPIHandler,
)

// consumerSet persists: the subscriber's deliveries, in batches, to the
// store, invalidating the cache entries each batch changes.
var consumerSet = wire.NewSet(persisterConfig, app.NewPersister)

// newHealth is readiness over what was opened: the store and the queue are
// required, the cache optional (queries fall back to the store).
func newHealth(s OpenedStore, q OpenedQueue, c OpenedCache, stats ports.QueueStats, log *slog.Logger) *app.Health {
	return app.NewHealth(stats, log, []app.Probe{s.Probe, q.Probe}, c.Probe)
}

// persisterConfig is --batch-* and --persist-writers; the persister does
// not linger when every ride it holds has a POST waiting for the store
// (Config.postWaitsForStore): lingering would only delay every 201, and
// rides that arrive during a write form the next batch anyway.
func persisterConfig(cfg Config) app.PersisterConfig {
	pc := cfg.Persister
	if cfg.postWaitsForStore() {
		pc.Linger = 0
	}
	return pc
}

// groupCommitOf is how the ingest's group commit publishes to the queue
// the configuration names (QueueDriver.GroupCommit); a queue without one
// takes each ride at once, alone.
func groupCommitOf(cfg Config) app.PublishConfig {
	if gc := queueDriver(cfg.Queue).GroupCommit; gc != nil {
		return gc(cfg)
	}
	return app.PublishConfig{}
}

// publisherOf puts the circuit breaker in front of the queue, whatever the
// queue: one that can only be full (backpressure, which the breaker does
// not count) or stopping never opens it, and one that can fail is
// guarded without a list of which can.
func publisherOf(q Queue, cfg Config, m ports.Metrics, log *slog.Logger) ports.Publisher {
	bc := cfg.Breaker
	bc.OnStateChange = func(from, to string) {
		m.BreakerState(to)
		log.Warn("publish circuit breaker changed state", "from", from, "to", to)
	}
	return breaker.New(q, bc)
}

// newAPIHandler is the whole HTTP API; newOpsHandler is a consumer's
// health, readiness and metrics. Both serve /metrics beside the generated
// routes (it is not part of openapi.yaml, and not counted in /statistics).
func newAPIHandler(cfg Config, in *app.Ingest, q *app.Query, c *app.Catalog, st *app.EndpointStats, h *app.Health, pm *prom.Metrics, log *slog.Logger) http.Handler {
	return httpapi.NewHandler(&httpapi.Handlers{Ingest: in, Queries: q, Resorts: c, Stats: st, Health: h, ClientAddress: clientAddress(cfg), Metrics: pm.Handler()}, log)
}

// clientAddress is how the API names a ride's client for the per-client
// limit: nil (no name, no cost) without one.
func clientAddress(cfg Config) func(*http.Request) string {
	switch {
	case cfg.Admission.ClientRate == 0:
		return nil
	case cfg.TrustForwardedFor:
		return httpapi.ForwardedAddress
	default:
		return httpapi.RemoteAddress
	}
}

func newOpsHandler(h *app.Health, st *app.EndpointStats, pm *prom.Metrics, log *slog.Logger) http.Handler {
	return httpapi.NewOpsHandler(h, st, pm.Handler(), log)
}

// configuredRegion is the local environment's region: the flag's, or the
// AWS SDK's default chain (AWS_REGION) when it is empty.
func configuredRegion(cfg Config) RegionSource {
	return func(context.Context) (string, error) { return cfg.Dynamo.Region, nil }
}

// regionOrInstance is the ec2 environment's: the flag's, else the region
// the instance runs in, from the metadata service (announced on log).
func regionOrInstance(cfg Config, log *slog.Logger) RegionSource {
	return func(ctx context.Context) (string, error) {
		if cfg.Dynamo.Region != "" {
			return cfg.Dynamo.Region, nil
		}
		return instanceRegion(ctx, log)
	}
}
