// Package redis is the Redis ports.Cache (github.com/redis/go-redis/v9):
// one cache shared by every API and consumer process (--cache redis), so the
// persister's invalidations reach every reader. Keys are namespaced with a
// prefix; TTLs are Redis's own (PX), so expiry needs nothing from us.
package redis
