package prom

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skidata/skidata/ports"
)

// Metrics is a ports.Metrics backed by a Prometheus registry.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	series       sync.Map // requestKey -> *requestSeries
	latency      *prometheus.HistogramVec
	queueDepth   prometheus.Gauge
	queueMsgs    prometheus.Gauge
	deadWaiting  prometheus.Gauge
	publishFails prometheus.Counter
	messageRides prometheus.Histogram
	batchSize    prometheus.Histogram
	writeLatency prometheus.Histogram
	cache        *prometheus.CounterVec
	ridesRefused *prometheus.CounterVec // skidata_rides_rejected_total
	ridesDropped *prometheus.CounterVec
	breaker      prometheus.Gauge
	capacity     *prometheus.CounterVec
	throttled    *prometheus.CounterVec
	batches      prometheus.Counter
	failed       prometheus.Counter
	rejected     prometheus.Counter
	deadLettered *prometheus.CounterVec
	queueReqs    *prometheus.CounterVec
	queueBilled  prometheus.Counter
	emptyRecvs   prometheus.Counter
	receiveLag   prometheus.Gauge
}

var _ ports.Metrics = (*Metrics)(nil)

// New returns the metrics with a fresh registry that also carries the Go
// runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "skidata_http_request_duration_seconds", Help: "HTTP request latency, by route template, method and status.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "method", "status"})
	reg.MustRegister(latency)
	m := &Metrics{
		reg:      reg,
		requests: counterVec("skidata_http_requests_total", "HTTP requests answered, by route template, method and status.", "route", "method", "status"),
		latency:  latency,
		queueDepth: gauge("skidata_queue_depth",
			"Rides published but not yet acknowledged, read every 100 ms; an estimate where the queue counts messages (RabbitMQ's messages not yet consumed, SQS's approximate messages, sampled every 10 s): messages times the mean rides per message."),
		deadWaiting: gauge("skidata_dead_letter_queue_messages",
			"Messages in the dead-letter queue, however they got there (the persister's own dead letters, or the broker's after the delivery limit); 0 without one."),
		queueMsgs: gauge("skidata_queue_depth_messages",
			"Messages published but not yet acknowledged, as the queue counts them, read every 100 ms (SQS: approximate, sampled every 10 s)."),
		publishFails: counter("skidata_publish_failures_total", "Rides in messages the queue would not take."),
		messageRides: histogram("skidata_publish_message_rides",
			"Rides per message the queue took (the group commit's fill: each message costs one broker confirm, or shares one store commit in process).",
			prometheus.ExponentialBuckets(1, 2, 13)),
		batchSize:    histogram("skidata_persist_batch_rides", "Rides per batch the persister wrote.", prometheus.ExponentialBuckets(1, 2, 14)),
		writeLatency: histogram("skidata_persist_write_seconds", "Store write latency per batch, retries included.", prometheus.ExponentialBuckets(0.0005, 2, 16)),
		cache:        counterVec("skidata_cache_lookups_total", "Query cache lookups, by query and result (hit or miss).", "query", "result"),
		ridesRefused: counterVec("skidata_rides_rejected_total",
			"Valid rides the API refused (answered anything but 201), by reason: rate, client_rate, queue_full, breaker_open, unavailable, not_found, canceled, error.", "reason"),
		ridesDropped: counterVec("skidata_rides_dropped_total",
			"Rides answered 201 that this process will not store, by reason (shutdown: left queued in this process when the drain budget ran out).", "reason"),
		breaker: gauge("skidata_publish_breaker_state", "Publish circuit breaker: 0 closed, 1 half-open, 2 open."),
		capacity: counterVec("skidata_store_capacity_units_total",
			"Capacity units consumed by store operations, by table, operation and kind (read, write).", "table", "op", "kind"),
		throttled: counterVec("skidata_store_throttled_total",
			"Store requests (or batch items) refused for lack of capacity and retried, by table and operation.", "table", "operation"),
		batches: counter("skidata_persist_batches_total", "Batches the persister stored and acknowledged."),
		failed:  counter("skidata_persist_failed_total", "Rides in batches the persister could not store and handed back to the queue."),
		rejected: counter("skidata_persist_rejected_total",
			"Rides the store refused as invalid (dead-lettered by a broker, dropped by the in-process queue)."),
		deadLettered: counterVec("skidata_rides_dead_lettered_total",
			"Rides this process moved to the dead-letter queue, by reason (rejected, unreadable).", "reason"),
		queueReqs: counterVec("skidata_queue_requests_total",
			"Requests this process made of a queue that bills by request (SQS), by API action, as answered: retries, errors and empty receives included.", "api"),
		queueBilled: counter("skidata_queue_billed_requests_total",
			"Request units those requests bill (SQS: one a request, one more for each further 64 KiB of messages it carries)."),
		emptyRecvs: counter("skidata_queue_empty_receives_total",
			"Receives that returned no message (a long poll of an idle queue), also counted in skidata_queue_requests_total."),
		receiveLag: gauge("skidata_queue_receive_lag_seconds",
			"Age, when it came, of the oldest message of this consumer's latest receive (0 after a receive that found none): the queue's lag as a consumer reads it (SQS; the oldest message's age itself is a CloudWatch metric)."),
	}
	// Every labelled series an alert or dashboard reads exists from the
	// start at 0: increase() and rate() see nothing until a series has
	// two samples, so a counter born at its first increment would hide
	// that increment (the first dead letter, a drop just before exit).
	for _, reason := range RideRejectionReasons {
		m.ridesRefused.WithLabelValues(reason)
	}
	m.ridesDropped.WithLabelValues("shutdown")
	for _, reason := range []string{"rejected", "unreadable"} {
		m.deadLettered.WithLabelValues(reason)
	}
	return m
}

// RideRejectionReasons are the reasons ports.Metrics.RideRejected is
// given, each a series of skidata_rides_rejected_total from the start.
var RideRejectionReasons = []string{"rate", "client_rate", "queue_full", "breaker_open", "unavailable", "not_found", "canceled", "error"}

// Handler serves the registry at /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveRequest implements ports.Metrics.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	key := requestKey{route, method, status}
	v, ok := m.series.Load(key)
	if !ok {
		s := strconv.Itoa(status)
		v, _ = m.series.LoadOrStore(key, &requestSeries{
			count:   m.requests.WithLabelValues(route, method, s),
			latency: m.latency.WithLabelValues(route, method, s),
		})
	}
	rs := v.(*requestSeries)
	rs.count.Inc()
	rs.latency.Observe(d.Seconds())
}

// requestKey names one series of the request metrics. Routes are the
// router's templates and only matched requests are observed, so the set
// stays small.
type requestKey struct {
	route, method string
	status        int
}

// requestSeries are a key's two series, looked up once: the vectors'
// WithLabelValues hashes every label on every call.
type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// SetQueueDepth implements ports.Metrics.
func (m *Metrics) SetQueueDepth(d ports.QueueDepth) {
	m.queueDepth.Set(float64(d.Rides))
	m.queueMsgs.Set(float64(d.Messages))
	m.deadWaiting.Set(float64(d.DeadLetters))
}

// PublishFailed implements ports.Metrics.
func (m *Metrics) PublishFailed(rides int) { m.publishFails.Add(float64(rides)) }

// MessagePublished implements ports.Metrics.
func (m *Metrics) MessagePublished(rides int) { m.messageRides.Observe(float64(rides)) }

// ObserveBatch implements ports.Metrics.
func (m *Metrics) ObserveBatch(rides int, d time.Duration) {
	m.batchSize.Observe(float64(rides))
	m.writeLatency.Observe(d.Seconds())
	m.batches.Inc()
}

// PersistFailed implements ports.Metrics.
func (m *Metrics) PersistFailed(rides int) { m.failed.Add(float64(rides)) }

// PersistRejected implements ports.Metrics.
func (m *Metrics) PersistRejected(rides int) { m.rejected.Add(float64(rides)) }

// RidesDeadLettered implements ports.Metrics.
func (m *Metrics) RidesDeadLettered(reason string, rides int) {
	m.deadLettered.WithLabelValues(reason).Add(float64(rides))
}

// QueueRequest implements ports.Metrics.
func (m *Metrics) QueueRequest(api string, billed int, emptyReceive bool) {
	m.queueReqs.WithLabelValues(api).Inc()
	m.queueBilled.Add(float64(billed))
	if emptyReceive {
		m.emptyRecvs.Inc()
	}
}

// QueueReceiveLag implements ports.Metrics.
func (m *Metrics) QueueReceiveLag(lag time.Duration) { m.receiveLag.Set(lag.Seconds()) }

// CacheLookup implements ports.Metrics.
func (m *Metrics) CacheLookup(query string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.WithLabelValues(query, result).Inc()
}

// RideRejected implements ports.Metrics.
func (m *Metrics) RideRejected(reason string) { m.ridesRefused.WithLabelValues(reason).Inc() }

// RidesDropped implements ports.Metrics.
func (m *Metrics) RidesDropped(reason string, n int) {
	m.ridesDropped.WithLabelValues(reason).Add(float64(n))
}

// BreakerState implements ports.Metrics.
func (m *Metrics) BreakerState(state string) {
	switch state {
	case "closed":
		m.breaker.Set(0)
	case "half-open":
		m.breaker.Set(1)
	case "open":
		m.breaker.Set(2)
	}
}

// AddCapacity implements ports.Metrics.
func (m *Metrics) AddCapacity(table, op string, read, write float64) {
	if read > 0 {
		m.capacity.WithLabelValues(table, op, "read").Add(read)
	}
	if write > 0 {
		m.capacity.WithLabelValues(table, op, "write").Add(write)
	}
}

// StoreThrottled implements ports.Metrics.
func (m *Metrics) StoreThrottled(table, operation string) {
	m.throttled.WithLabelValues(table, operation).Inc()
}
