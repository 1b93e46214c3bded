// Package redistest names the Redis the tests use: the machine's
// (scripts/services.sh starts it) or the one SKIDATA_TEST_REDIS_URL names.
// Under -short (test/needs) a test that asks for it skips, naming Redis;
// otherwise an unreachable Redis fails the test that dials it.
package redistest

import (
	"testing"

	"github.com/skidata/skidata/test/needs"
)

// EnvURL names a Redis to use instead of the machine's own.
const EnvURL = "SKIDATA_TEST_REDIS_URL"

// URL is the Redis the tests run against. It is how a test says it needs
// Redis: under -short it skips t, naming the server.
func URL(t testing.TB) string {
	t.Helper()
	return needs.URL(t, "Redis", EnvURL, "redis://127.0.0.1:6379/0")
}
