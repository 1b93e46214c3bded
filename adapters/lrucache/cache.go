package lrucache

import (
	"context"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skidata/skidata/ports"
)

type entry struct {
	value   []byte
	expires time.Time
}

// Cache is a bounded, TTL-respecting in-process cache.
type Cache struct {
	lru *lru.Cache[string, entry]
	now func() time.Time
}

var _ ports.Cache = (*Cache)(nil)

// New returns a cache holding at most size entries.
func New(size int) (*Cache, error) {
	l, err := lru.New[string, entry](size)
	if err != nil {
		return nil, fmt.Errorf("in-process cache of %d entries: %w", size, err)
	}
	return &Cache{lru: l, now: time.Now}, nil
}

// Get implements ports.Cache.
func (c *Cache) Get(_ context.Context, key string) ([]byte, bool, error) {
	e, ok := c.lru.Get(key)
	if !ok {
		return nil, false, nil
	}
	if !c.now().Before(e.expires) {
		c.lru.Remove(key)
		return nil, false, nil
	}
	return append([]byte{}, e.value...), true, nil
}

// Set implements ports.Cache. The value is copied: the caller may reuse it.
func (c *Cache) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.lru.Add(key, entry{value: append([]byte{}, value...), expires: c.now().Add(ttl)})
	return nil
}

// Delete implements ports.Cache.
func (c *Cache) Delete(_ context.Context, keys ...string) error {
	for _, k := range keys {
		c.lru.Remove(k)
	}
	return nil
}
