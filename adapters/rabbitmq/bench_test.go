package rabbitmq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/queuetest"
)

// BenchmarkPublishConcurrent publishes from 64 goroutines to one quorum
// queue and reports confirmed rides/s: --amqp-publish-batch 1 is one ride
// per message (the behaviour before group commit), 256 the default.
//
//	go test -run '^$' -bench PublishConcurrent -benchtime 20000x ./adapters/rabbitmq/
func BenchmarkPublishConcurrent(b *testing.B) {
	for _, batch := range []int{1, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			cfg := rabbitmq.Config{URL: testURL(), Prefix: fmt.Sprintf("skibench.publish.%d.%d", time.Now().UnixNano(), batch), PublishBatch: batch}
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
						i := next.Add(1) - 1
						if i >= int64(len(rides)) {
							return
						}
						if err := br.Publish(ctx, rides[i]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rides/s")
			if n, err := br.Depth(ctx); err == nil {
				b.ReportMetric(float64(b.N)/float64(max(n, 1)), "rides/msg")
			}
		})
	}
}
