// Package postgres is the PostgreSQL store adapter: it keeps lift rides and
// the reference data (resorts and their seasons) in PostgreSQL through
// jackc/pgx/v5 and its pool, with no ORM.
//
// In the flow it sits behind ports.RideStore and ports.ResortStore: the
// persister hands it batches of rides taken off the queue (AddRides, one
// round trip per batch, idempotent on the ride identity so redelivered
// batches count once), and the query use cases read from it through indexes
// that serve each query without scanning the rides table.
//
// Open builds the pool and applies the embedded schema migrations (in
// order, recorded in schema_migrations, under an advisory lock so that
// processes starting together do not race). Errors that mean "the database
// cannot take work right now" are wrapped with domain.ErrUnavailable so the
// persister retries the batch instead of dropping it. See docs/postgres.md.
package postgres
