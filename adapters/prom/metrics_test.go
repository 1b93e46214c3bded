package prom

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
)

func TestHandlerExposesEveryEventAsASeries(t *testing.T) {
	m := New()
	m.ObserveRequest("/resorts", "GET", 200, time.Millisecond)
	m.SetQueueDepth(ports.QueueDepth{Rides: 7, Messages: 2})
	m.PublishFailed(3)
	m.MessagePublished(40)
	m.MessagePublished(2)
	m.ObserveBatch(20, time.Millisecond)
	m.CacheLookup("skier_day_vertical", true)
	m.CacheLookup("skier_day_vertical", false)
	m.BreakerState("open")
	m.AddCapacity("skierTable", "AddRides", 0, 25)
	m.StoreThrottled("skierTable", "BatchWriteItem")
	m.RideRejected("not_found")
	m.RidesDropped("shutdown", 5)
	m.PersistFailed(3)
	m.PersistRejected(2)
	m.RidesDeadLettered("rejected", 2)
	m.QueueRequest("SendMessage", 2, false)
	m.QueueRequest("ReceiveMessage", 1, true)
	m.QueueReceiveLag(1500 * time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`skidata_http_requests_total{method="GET",route="/resorts",status="200"} 1`,
		`skidata_http_request_duration_seconds_count{method="GET",route="/resorts",status="200"} 1`,
		`skidata_queue_depth 7`,
		`skidata_queue_depth_messages 2`,
		`skidata_publish_failures_total 3`,
		`skidata_publish_message_rides_count 2`,
		`skidata_publish_message_rides_sum 42`,
		`skidata_publish_message_rides_bucket{le="32"} 1`,
		`skidata_persist_batch_rides_sum 20`,
		`skidata_persist_write_seconds_count 1`,
		`skidata_cache_lookups_total{query="skier_day_vertical",result="hit"} 1`,
		`skidata_cache_lookups_total{query="skier_day_vertical",result="miss"} 1`,
		`skidata_publish_breaker_state 2`,
		`skidata_rides_rejected_total{reason="not_found"} 1`,
		`skidata_rides_dropped_total{reason="shutdown"} 5`,
		`skidata_store_capacity_units_total{kind="write",op="AddRides",table="skierTable"} 25`,
		`skidata_store_throttled_total{operation="BatchWriteItem",table="skierTable"} 1`,
		`skidata_persist_batches_total 1`,
		`skidata_persist_failed_total 3`,
		`skidata_persist_rejected_total 2`,
		`skidata_rides_dead_lettered_total{reason="rejected"} 2`,
		`skidata_queue_requests_total{api="SendMessage"} 1`,
		`skidata_queue_requests_total{api="ReceiveMessage"} 1`,
		`skidata_queue_billed_requests_total 3`,
		`skidata_queue_empty_receives_total 1`,
		`skidata_queue_receive_lag_seconds 1.5`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestEveryCounterAnAlertReadsExistsAtZeroFromTheStart: increase() and
// rate() need two samples of a series, so a labelled counter created at its
// first increment hides that increment from every alert. Each labelled
// series an alert or the dashboard reads is therefore served at 0 before
// anything happened.
func TestEveryCounterAnAlertReadsExistsAtZeroFromTheStart(t *testing.T) {
	rec := httptest.NewRecorder()
	New().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	want := []string{
		`skidata_rides_dropped_total{reason="shutdown"} 0`,
		`skidata_rides_dead_lettered_total{reason="rejected"} 0`,
		`skidata_rides_dead_lettered_total{reason="unreadable"} 0`,
		`skidata_publish_failures_total 0`,
		`skidata_persist_failed_total 0`,
		`skidata_persist_rejected_total 0`,
	}
	for _, reason := range RideRejectionReasons {
		want = append(want, `skidata_rides_rejected_total{reason="`+reason+`"} 0`)
	}
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("/metrics of a fresh process lacks %s", w)
		}
	}
}
