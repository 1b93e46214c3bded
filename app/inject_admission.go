package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/lrucache"
	"github.com/skidata/skidata/adapters/prom"
	"github.com/skidata/skidata/adapters/redis"
	"github.com/skidata/skidata/ports"
)

// admissionSet provides what every injector shares for admission control,
// caching and observability: the Prometheus metrics, the admission decorator
// in front of ingest, and the cache named by --cache. It is part of coreSet,
// so no injector has to list it.
var admissionSet = wire.NewSet(
	prom.New, wire.Bind(new(ports.Metrics), new(*prom.Metrics)),
	admissionConfig,
	NewAdmission,
	cacheTTL,
	provideCache,
)

func admissionConfig(cfg Config) AdmissionConfig { return cfg.Admission }
func cacheTTL(cfg Config) CacheTTL               { return CacheTTL(cfg.CacheTTL) }

// provideCache returns the query cache --cache names; nil for none.
func provideCache(ctx context.Context, cfg Config) (ports.Cache, func(), error) {
	switch cfg.Cache {
	case "none":
		return nil, func() {}, nil
	case "memory":
		c, err := lrucache.New(cfg.CacheSize)
		if err != nil {
			return nil, nil, err
		}
		return c, func() {}, nil
	case "redis":
		c, err := redis.New(ctx, redis.Config{URL: cfg.RedisURL, Prefix: cfg.RedisPrefix})
		if err != nil {
			return nil, nil, fmt.Errorf("--cache redis: %w", err)
		}
		return c, func() { _ = c.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("cache %q is not built into this binary", cfg.Cache)
	}
}

// withMetricsEndpoint serves /metrics on the API's listener, next to the
// API (it is not part of openapi.yaml, and not counted in /statistics).
func withMetricsEndpoint(api http.Handler, pm *prom.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", pm.Handler())
	mux.Handle("/", api)
	return mux
}
