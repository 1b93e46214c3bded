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

// The provider sets the injectors (inject_local.go, inject_ec2.go) are
// built from: what every role needs, then what the API and the consumer
// add. The environment's set adds where the AWS region comes from.

// commonSet: logs, metrics, the store, the queue, the cache and readiness,
// each adapter opened through the registry (registry.go).
var commonSet = wire.NewSet(
	NewLogger,
	prom.New, wire.Bind(new(ports.Metrics), new(*prom.Metrics)),
	newEnv,
	provideStores, ridesOf, resortsOf, storeProbeOf,
	provideQueue, queueOf, queueProbeOf, queueStatsOf,
	provideCache, cacheOf, cacheProbeOf,
	app.NewHealth,
	app.NewEndpointStats,
)

// apiSet takes rides and answers queries: ingest behind admission control
// and the circuit breaker, queries through the cache, the whole HTTP API.
var apiSet = wire.NewSet(
	seedDemo, app.NewCatalog,
	publisherOf, publishConfigOf, admissionConfig, app.NewIngest,
	cacheTTL, app.NewQuery,
	newAPIHandler,
)

// consumerSet persists: the subscriber's deliveries, in batches, to the
// store, invalidating the cache entries each batch changes.
var consumerSet = wire.NewSet(
	subscriberOf,
	persisterConfig, app.NewPersister,
)

func newEnv(cfg Config, m ports.Metrics, region RegionSource) Env {
	return Env{Config: cfg, Metrics: m, Region: region}
}

func provideStores(ctx context.Context, env Env) (Stores, func(), error) {
	return OpenStore(ctx, env)
}

func ridesOf(s Stores) ports.RideStore     { return s.Rides }
func resortsOf(s Stores) ports.ResortStore { return s.Resorts }
func storeProbeOf(s Stores) app.StoreProbe { return app.StoreProbe(s.Probe) }

// provideQueue opens the queue --queue names, and its readiness check.
func provideQueue(ctx context.Context, env Env) (OpenQueue, func(), error) {
	return queueDriver(env.Config.Queue).Open(ctx, env)
}

func queueOf(q OpenQueue) Queue                     { return q.Queue }
func publishConfigOf(q OpenQueue) app.PublishConfig { return q.Publish }
func queueProbeOf(q OpenQueue) app.QueueProbe       { return app.QueueProbe(q.Probe) }

func subscriberOf(q Queue) ports.Subscriber { return q }
func queueStatsOf(q Queue) ports.QueueStats { return q }

// provideCache opens the query cache --cache names (a nil cache for none),
// and its readiness check.
func provideCache(ctx context.Context, env Env) (OpenCache, func(), error) {
	return cacheDriver(env.Config.Cache).Open(ctx, env)
}

func cacheOf(c OpenCache) ports.Cache         { return c.Cache }
func cacheProbeOf(c OpenCache) app.CacheProbe { return app.CacheProbe(c.Probe) }

func admissionConfig(cfg Config) app.AdmissionConfig { return cfg.Admission }
func cacheTTL(cfg Config) app.CacheTTL               { return app.CacheTTL(cfg.CacheTTL) }
func seedDemo(cfg Config) app.SeedDemo               { return app.SeedDemo(cfg.SeedDemo) }

// persisterConfig is --batch-* and --persist-writers; with an in-process
// queue whose publishers wait for the store, batches go without lingering.
func persisterConfig(cfg Config) app.PersisterConfig {
	pc := cfg.Persister
	if inprocWaitsForStore(cfg) {
		pc.Linger = 0
	}
	return pc
}

// publisherOf puts the circuit breaker in front of the queue.
func publisherOf(q Queue, cfg Config, m ports.Metrics, log *slog.Logger) ports.Publisher {
	bc := cfg.Breaker
	bc.OnStateChange = func(from, to string) {
		m.BreakerState(to)
		log.Warn("publish circuit breaker changed state", "from", from, "to", to)
	}
	return breaker.New(q, bc)
}

// apiHandler is the whole HTTP API; opsHandler is a consumer's health,
// readiness and metrics. Both serve /metrics beside the generated routes
// (it is not part of openapi.yaml, and not counted in /statistics).
type (
	apiHandler http.Handler
	opsHandler http.Handler
)

func newAPIHandler(in *app.Ingest, q *app.Query, c *app.Catalog, st *app.EndpointStats, h *app.Health, pm *prom.Metrics, log *slog.Logger) apiHandler {
	return withMetricsEndpoint(httpapi.NewHandler(&httpapi.Handlers{Ingest: in, Queries: q, Resorts: c, Stats: st, Health: h}, log), pm)
}

func newOpsHandler(h *app.Health, st *app.EndpointStats, pm *prom.Metrics, log *slog.Logger) opsHandler {
	return withMetricsEndpoint(httpapi.NewOpsHandler(h, st, log), pm)
}

// withMetricsEndpoint routes GET /metrics by hand rather than with a
// ServeMux: a mux in front would redirect non-canonical paths ("/./x") with
// a plain-text 3xx before the API's router could answer them in JSON.
func withMetricsEndpoint(api http.Handler, pm *prom.Metrics) http.Handler {
	metrics := pm.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			metrics.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// The three roles' services: all (API and persister in one process), api
// (publishes only) and consumer (persists only, and serves health,
// readiness and metrics).
func newAllService(cfg Config, log *slog.Logger, h apiHandler, p *app.Persister, sub ports.Subscriber, stats ports.QueueStats, m ports.Metrics) *Service {
	return &Service{cfg: cfg, log: log, handler: h, persister: p, sub: sub, stats: stats, metrics: m}
}

func newAPIService(cfg Config, log *slog.Logger, h apiHandler, stats ports.QueueStats, m ports.Metrics) *Service {
	return &Service{cfg: cfg, log: log, handler: h, stats: stats, metrics: m}
}

func newConsumerService(cfg Config, log *slog.Logger, h opsHandler, p *app.Persister, sub ports.Subscriber, stats ports.QueueStats, m ports.Metrics) *Service {
	return &Service{cfg: cfg, log: log, handler: h, persister: p, sub: sub, stats: stats, metrics: m}
}

// configuredRegion is the local environment's region: the flag's, or the
// AWS SDK's default chain (AWS_REGION) when it is empty.
func configuredRegion(cfg Config) RegionSource {
	return func(context.Context) (string, error) { return cfg.Dynamo.Region, nil }
}

// regionOrInstance is the ec2 environment's: the flag's, else the region
// the instance runs in, from the metadata service.
func regionOrInstance(cfg Config) RegionSource {
	return func(ctx context.Context) (string, error) {
		if cfg.Dynamo.Region != "" {
			return cfg.Dynamo.Region, nil
		}
		return instanceRegion(ctx)
	}
}
