// Package rabbitmq is the broker queue adapter: it implements ports.Publisher,
// ports.Subscriber and ports.QueueStats on RabbitMQ, so the API servers and
// the persister can run as separate processes:
//
//	POST -> app.Ingest -> (*Broker).Publish -> RabbitMQ -> (*Broker).Deliveries -> app.Persister -> store
//
// Publish returns nil only after the broker confirmed the ride (publisher
// confirms on durable queues, persistent messages), so a ride answered with
// 201 survives the API process. The persister acknowledges a batch only after
// the store wrote it, so a ride survives the persister too; a ride delivered
// twice is harmless because every store is idempotent on the ride identity.
//
// docs/rabbitmq.md describes the topology (shard queues, dead-letter
// exchange and queue), the guarantees and the knobs in Config.
package rabbitmq
