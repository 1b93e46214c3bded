package redis

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/cachetest"
	"github.com/skidata/skidata/test/redistest"
)

var seq atomic.Int64

// NewTestCache returns a cache on its own key prefix, deleted when the test
// ends. It fails the test, naming Redis, when Redis does not answer.
func newTestCache(t *testing.T) *Cache {
	t.Helper()
	url := redistest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("skitest:%d:%d:%d:", os.Getpid(), time.Now().UnixNano(), seq.Add(1))
	c, err := New(ctx, Config{URL: url, Prefix: prefix})
	if err != nil {
		t.Fatalf("Redis at %s is needed for this test (start it with `make services`, or set %s): %v", url, redistest.EnvURL, err)
	}
	t.Cleanup(func() {
		if err := c.DeletePrefix(context.Background()); err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		_ = c.Close()
	})
	return c
}

func TestCacheContract(t *testing.T) {
	cachetest.Run(t, func(t *testing.T) ports.Cache { return newTestCache(t) })
}

func TestNewFailsNamingRedisWhenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := New(ctx, Config{URL: "redis://127.0.0.1:1/0"})
	if err == nil {
		t.Fatal("New against a closed port succeeded")
	}
	if got := err.Error(); !strings.Contains(got, "redis") {
		t.Errorf("error %q does not name redis", got)
	}
}
