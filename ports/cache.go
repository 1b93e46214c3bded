package ports

import (
	"context"
	"time"
)

// Cache keeps query answers for a while so repeated GETs do not reach the
// store. The core decides the keys (app/cachekeys.go) and the encoding; a
// cache only stores bytes.
//
// Contract (test/cachetest checks every adapter against it):
//   - Get of a key never set, deleted, or older than its TTL is a miss
//     (ok false, err nil); an error means the cache could not be asked.
//   - Set replaces the value; a stored empty value is a hit, not a miss.
//   - Delete removes every key given; deleting a missing key is not an error.
//   - Values come back byte for byte as they were set.
type Cache interface {
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Delete(ctx context.Context, keys ...string) error
}
