// Package compose builds the running service from its configuration: the
// Config types (each adapter's own, filled by the flags) and deployment
// profiles, the one registry of stores, queues and caches (registry.go),
// the wire provider sets and injectors per role (providers.go, inject.go,
// the generated wire_gen.go), the log handler, and the server lifecycle
// (service.go: serve, drain on SIGTERM). The command line's usage text,
// typo hints and operations commands live with cmd/skiapi.
package compose
