package rabbitmq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/queuetest"
)

// BenchmarkPublishConcurrent publishes from 64 goroutines to one quorum
// queue and reports confirmed rides/s: messages of one ride (what the
// group commit sends under light load) and of 256 (its default bound).
//
//	go test -run '^$' -bench PublishConcurrent -benchtime 20000x ./adapters/rabbitmq/
func BenchmarkPublishConcurrent(b *testing.B) {
	for _, batch := range []int{1, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			cfg := rabbitmq.Config{URL: amqptest.URL(b), Prefix: fmt.Sprintf("skibench.publish.%d.%d", time.Now().UnixNano(), batch)}
			ctx := context.Background()
			br, err := rabbitmq.Open(ctx, cfg)
			if err != nil {
				b.Fatalf("RabbitMQ is needed for this benchmark: %v", err)
			}
			defer func() {
				_ = br.DeleteTopology(ctx)
				_ = br.Disconnect()
			}()
			rides := queuetest.Rides(b.N, 1)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 64 {
				wg.Go(func() {
					for {
						i := int(next.Add(int64(batch)) - int64(batch))
						if i >= len(rides) {
							return
						}
						if err := br.Publish(ctx, rides[i:min(i+batch, len(rides))]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rides/s")
			if d, err := br.Depth(ctx); err == nil {
				b.ReportMetric(float64(b.N)/float64(max(d.Messages, 1)), "rides/msg")
			}
		})
	}
}
