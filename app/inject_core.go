package app

import (
	"log/slog"
	"net/http"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/adapters/prom"
	"github.com/skidata/skidata/ports"
)

// coreSet builds the use cases and the HTTP adapter around whichever store
// and queue the injector adds.
var coreSet = wire.NewSet(
	NewLogger,
	NewCatalog,
	NewIngest,
	NewQuery,
	NewEndpointStats,
	NewHealth,
	persisterConfig,
	seedDemo,
	NewPersister,
	newHTTPHandler,
	NewService,
	admissionSet,
)

func persisterConfig(cfg Config) PersisterConfig { return cfg.Persister }
func seedDemo(cfg Config) SeedDemo               { return SeedDemo(cfg.SeedDemo) }

func newHTTPHandler(in *Admission, q *Query, c *Catalog, st *EndpointStats, h *Health, pm *prom.Metrics, log *slog.Logger) http.Handler {
	return withMetricsEndpoint(httpapi.NewHandler(&httpapi.Handlers{Ingest: in, Queries: q, Resorts: c, Stats: st, Health: h}, log), pm)
}

// queueAdapter is what every queue adapter is: publisher, subscriber and
// depth gauge in one.
type queueAdapter interface {
	ports.Publisher
	ports.Subscriber
	ports.QueueStats
}

func subscriberOf(q queueAdapter) ports.Subscriber { return q }
func queueStatsOf(q queueAdapter) ports.QueueStats { return q }
