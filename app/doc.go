// Package app holds skidata's use cases; they speak only domain types and
// ports.
//
//   - Ingest takes a POSTed ride: admission control (a token bucket that
//     follows the queue depth, a hard ceiling), the catalogue check, and
//     the group commit that publishes rides arriving together as one
//     queue message (groupcommit.go).
//   - Persister takes messages off the queue, writes the rides of the
//     deliveries it holds in one store call, then settles each delivery.
//   - Query answers the read side through an optional ports.Cache, whose
//     keys (cachekeys.go) the Persister invalidates.
//   - Catalog serves resorts and seasons from memory; Health answers
//     /readyz; EndpointStats keeps /statistics.
//
// Every use case reports to ports.Metrics. Composition (app/compose) is
// the only place that knows the adapters. Besides domain and ports, the use
// cases lean on two small general-purpose libraries, for algorithms rather
// than technologies: cenkalti/backoff (the persister's retries) and
// golang.org/x/time/rate (the ingest token bucket).
package app
