package lrucache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/cachetest"
)

func TestCacheContract(t *testing.T) {
	cachetest.Run(t, func(t *testing.T) ports.Cache {
		c, err := New(1000)
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

func TestCacheIsBounded(t *testing.T) {
	c, err := New(10)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 100 {
		_ = c.Set(ctx, fmt.Sprint(i), []byte("v"), time.Hour)
	}
	if n := c.lru.Len(); n != 10 {
		t.Errorf("cache of 10 holds %d entries after 100 sets", n)
	}
	if _, ok, _ := c.Get(ctx, "99"); !ok {
		t.Error("the most recent entry was evicted")
	}
}
