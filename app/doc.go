// Package app holds skidata's use cases and composes the running service.
//
// The use cases (Ingest, Persister, Query, Catalog, EndpointStats, Health)
// speak only domain types and ports. The composition lives in the injector
// files: wire.go (the wireinject injectors, one per store family), inject_*.go
// (the provider functions that build adapters from Config) and the generated
// wire_gen.go. Those are the only files of this package that import an
// adapter.
package app
