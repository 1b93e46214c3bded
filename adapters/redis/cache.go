package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/skidata/skidata/adapters/redact"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Config says which Redis to use.
type Config struct {
	// URL is a redis:// URL, e.g. redis://127.0.0.1:6379/0.
	URL string
	// Prefix is put in front of every key, so several services (or tests)
	// can share one database.
	Prefix string
}

// Cache is a ports.Cache in Redis.
type Cache struct {
	client *goredis.Client
	prefix string
}

var _ ports.Cache = (*Cache)(nil)

// New connects to Redis and checks it answers. Close releases the pool.
func New(ctx context.Context, cfg Config) (*Cache, error) {
	opts, err := goredis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("redis url %q: %s", redact.Secrets(cfg.URL), redact.Secrets(err.Error()))
	}
	c := &Cache{client: goredis.NewClient(opts), prefix: cfg.Prefix}
	if err := c.Ping(ctx); err != nil {
		_ = c.client.Close()
		return nil, err
	}
	return c, nil
}

// Ping checks Redis answers (the readiness probe).
func (c *Cache) Ping(ctx context.Context) error {
	if err := c.client.Ping(ctx).Err(); err != nil {
		return domain.Unavailable("redis at %s does not answer: %v", c.client.Options().Addr, err)
	}
	return nil
}

// Close releases the connection pool.
func (c *Cache) Close() error { return c.client.Close() }

// Get implements ports.Cache.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := c.client.Get(ctx, c.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis get %s: %w", key, err)
	}
	return v, true, nil
}

// Set implements ports.Cache.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := c.client.Set(ctx, c.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis set %s: %w", key, err)
	}
	return nil
}

// Delete implements ports.Cache: one DEL for all the keys.
func (c *Cache) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = c.prefix + k
	}
	if err := c.client.Del(ctx, full...).Err(); err != nil {
		return fmt.Errorf("redis delete %d keys: %w", len(keys), err)
	}
	return nil
}

// DeletePrefix removes every key under the cache's prefix (tests use it to
// clean up after themselves).
func (c *Cache) DeletePrefix(ctx context.Context) error {
	iter := c.client.Scan(ctx, 0, c.prefix+"*", 500).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis scan %s*: %w", c.prefix, err)
	}
	if len(batch) == 0 {
		return nil
	}
	return c.client.Del(ctx, batch...).Err()
}
