// Package dynamo is the DynamoDB store adapter: ports.RideStore in four data
// models and a ports.ResortStore shared by all, on aws-sdk-go-v2.
//
// In the flow (see docs/architecture.md) it sits behind the persister, which
// hands it batches of rides taken off the queue, and behind the query
// service, which asks it the read-side questions. Several models exist so
// the benchmark (cmd/skibench) can compare them (docs/dynamodb.md explains
// them):
//
//   - adopted: one item per ride, written with BatchWriteItem; reads
//     aggregate in the application.
//   - abandoned: one item per skier, day and resort holding the list of
//     rides and a pre-aggregated vertical, written with conditional
//     UpdateItems.
//   - counters: the adopted model's batched ride items, plus skier-day and
//     resort-day counter items, each guarded by a set of what it has
//     counted inside the same item, so conditional updates keep them exact
//     under redelivery without transactions.
//   - sharded (production): one item per ride under the skier, with no
//     index, plus one skier-day marker per resort-day under a
//     write-sharded key, so no key of a resort-day's burst is hot;
//     UniqueSkiers counts the markers of every shard.
//
// Every read of a table is strongly consistent, so once AddRides has
// returned every query of the sharded and counters models sees its rides;
// the adopted and abandoned models' UniqueSkiers reads the resort index,
// which cannot be read consistently and may lag the writes briefly
// ("Read consistency" in docs/dynamodb.md).
//
// Each counts the capacity units DynamoDB reports per operation (Stats) so the
// benchmark can report cost. Table and index definitions live in tables.go
// only; CreateTables and DescribeTables serve the `skiapi tables` command.
package dynamo
