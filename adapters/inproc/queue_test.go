package inproc_test

import (
	"testing"

	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/test/queuetest"
)

func TestQueueContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, capacity int) queuetest.Queue {
		q := inproc.New(capacity)
		t.Cleanup(func() { _ = q.Close() })
		return queuetest.Queue{Pub: q, Sub: q, Stats: q}
	})
}
