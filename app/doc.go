// Package app holds skidata's use cases and composes the running service.
//
// The use cases (Ingest, Persister, Query, Catalog, EndpointStats, Health)
// speak only domain types and ports. Admission (admission.go) decorates
// Ingest with rate limiting and queue-depth shedding; Query reads through an
// optional ports.Cache whose keys (cachekeys.go) the Persister invalidates;
// every use case reports to ports.Metrics. The composition lives in the injector
// files: wire.go (the wireinject injectors, one per store family), inject_*.go
// (the provider functions that build adapters from Config) and the generated
// wire_gen.go. Those are the only files of this package that import an
// adapter.
//
// Besides domain and ports, the use cases lean on two small general-purpose
// libraries, for algorithms rather than technologies: cenkalti/backoff (the
// persister's retries) and golang.org/x/time/rate (the ingest token bucket).
package app
