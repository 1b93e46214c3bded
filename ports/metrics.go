package ports

import "time"

// Metrics receives the events the core and its decorators emit, so that an
// exporter (adapters/prom) can count them without the core knowing it.
// Every method must be cheap and safe for concurrent use: most run on the
// request path.
type Metrics interface {
	// ObserveRequest records one answered request: the route template, the
	// method, the status and how long it took. It is fed from the same call
	// as /statistics (EndpointStats.Observe), so the two always agree.
	ObserveRequest(route, method string, status int, d time.Duration)
	// SetQueueDepth reports the latest sampled queue depth.
	SetQueueDepth(depth QueueDepth)
	// PublishFailed counts the rides of a message the queue would not take.
	PublishFailed(rides int)
	// MessagePublished records one message the queue took and how many
	// rides it carried: how full the group commit makes the messages that
	// each cost a broker confirm (or, in process, share a store commit).
	MessagePublished(rides int)
	// ObserveBatch records one batch the persister wrote: its size and how
	// long the store write took.
	ObserveBatch(rides int, d time.Duration)
	// CacheLookup counts a cache read for a query: hit or miss.
	CacheLookup(query string, hit bool)
	// RideRejected counts a valid ride the API answered with anything but
	// 201; reason is one of "rate" (429), "queue_full" (the queue is at its
	// ceiling: 503), "breaker_open" (publishing paused after queue
	// failures: 503), "unavailable" (the queue failed it: 503), "not_found"
	// (unknown resort or season: 404), "canceled" (the client went away)
	// or "error".
	RideRejected(reason string)
	// RidesDropped counts rides that were accepted (answered 201) but will
	// not be stored by this process: reason "shutdown" is the rides still
	// queued in this process when its drain budget ran out.
	RidesDropped(reason string, n int)
	// BreakerState reports the publish circuit breaker's new state:
	// "closed", "half-open" or "open".
	BreakerState(state string)
	// AddCapacity counts capacity units a store operation consumed on a
	// table (for stores that bill by them, e.g. DynamoDB).
	AddCapacity(table, op string, read, write float64)
	// StoreThrottled counts one request (or batch item) the store refused
	// for lack of capacity and the adapter sent again.
	StoreThrottled(table, operation string)
	// PersistFailed counts a batch of rides the persister could not store
	// and handed back to the queue (the store kept failing with an error
	// that is neither "unavailable" nor "invalid").
	PersistFailed(rides int)
	// PersistRejected counts rides the store refused as invalid; the queue
	// dead-letters them (a broker) or drops them (in process).
	PersistRejected(rides int)
	// RidesDeadLettered counts rides a queue adapter moved to its
	// dead-letter queue itself; reason is "rejected" (refused by the store)
	// or "unreadable" (a message body no release can decode).
	RidesDeadLettered(reason string, rides int)
	// QueueRequest counts one request a queue adapter made of a service
	// that bills by request (SQS), as the service answered it (retries and
	// errors included): its API action, the request units billed for it,
	// and whether it was a receive that returned no message.
	QueueRequest(api string, billed int, emptyReceive bool)
	// QueueReceiveLag reports how old the oldest message of a consumer's
	// latest receive was when it came (0 after a receive that found none):
	// the queue's lag as a consumer can read it, where the queue cannot be
	// asked for the age of its oldest message.
	QueueReceiveLag(lag time.Duration)
}

// NopMetrics discards every event: the default when nothing exports them,
// and what unit tests pass.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) ObserveRequest(string, string, int, time.Duration) {}
func (NopMetrics) SetQueueDepth(QueueDepth)                          {}
func (NopMetrics) PublishFailed(int)                                 {}
func (NopMetrics) MessagePublished(int)                              {}
func (NopMetrics) ObserveBatch(int, time.Duration)                   {}
func (NopMetrics) CacheLookup(string, bool)                          {}
func (NopMetrics) RideRejected(string)                               {}
func (NopMetrics) RidesDropped(string, int)                          {}
func (NopMetrics) BreakerState(string)                               {}
func (NopMetrics) AddCapacity(string, string, float64, float64)      {}
func (NopMetrics) StoreThrottled(string, string)                     {}
func (NopMetrics) PersistFailed(int)                                 {}
func (NopMetrics) PersistRejected(int)                               {}
func (NopMetrics) RidesDeadLettered(string, int)                     {}
func (NopMetrics) QueueRequest(string, int, bool)                    {}
func (NopMetrics) QueueReceiveLag(time.Duration)                     {}
