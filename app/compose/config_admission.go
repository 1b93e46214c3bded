package compose

import (
	"flag"
	"fmt"
	"net"
	"strings"
)

// registerAdmissionFlags binds the flags of admission control and the
// publish circuit breaker.
func (c *Config) registerAdmissionFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.Admission.Rate, "ingest-rate", c.Admission.Rate, "most rides per second this process accepts (token bucket); beyond it POST answers 429; 0 = unlimited")
	fs.IntVar(&c.Admission.Burst, "ingest-burst", c.Admission.Burst, "rides accepted at once above --ingest-rate; 0 = one second's worth")
	fs.DurationVar(&c.Admission.MaxWait, "ingest-max-wait", c.Admission.MaxWait, "how long a ride over --ingest-rate or --client-rate may wait for its token before it is answered 429; 0 = refuse at once")
	fs.Float64Var(&c.Admission.ClientRate, "client-rate", c.Admission.ClientRate, "most rides per second one client (its address) may send; beyond it its POSTs answer 429 while other clients get in; 0 = no per-client limit")
	fs.IntVar(&c.Admission.ClientBurst, "client-burst", c.Admission.ClientBurst, "rides one client may send at once above --client-rate; 0 = one second's worth")
	fs.BoolVar(&c.TrustForwardedFor, "trust-forwarded-for", c.TrustForwardedFor, "take a client's address from the last X-Forwarded-For entry (set it only behind a load balancer that appends it and is the only way in)")
	fs.Int64Var(&c.Admission.SoftLimit, "queue-soft-limit", c.Admission.SoftLimit, "queue depth above which --ingest-rate is scaled down linearly toward --queue-hard-limit; 0 = off")
	fs.Int64Var(&c.Admission.HardLimit, "queue-hard-limit", c.Admission.HardLimit, "queue depth at which POST answers 503 at once; 0 = off")
	fs.Var(intFlag[uint32]{&c.Breaker.Failures}, "breaker-failures", "publishes in a row the queue must refuse before the circuit breaker opens (POST answers 503 at once); 0 = no breaker")
	fs.DurationVar(&c.Breaker.OpenFor, "breaker-open-for", c.Breaker.OpenFor, "how long the breaker stays open before one probe publish is let through")
}

// registerCacheFlags binds the flags of the query cache.
func (c *Config) registerCacheFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Cache, "cache", c.Cache, "cache for GET queries: "+strings.Join(CacheNames(), "|"))
	fs.DurationVar(&c.Query.CacheTTL, "cache-ttl", c.Query.CacheTTL, "how long a cached answer lives (bounds staleness if an invalidation is lost)")
	fs.IntVar(&c.CacheSize, "cache-size", c.CacheSize, "most entries the in-process cache (--cache memory) holds")
	fs.StringVar(&c.Redis.URL, "redis-url", c.Redis.URL, "Redis for --cache redis")
	fs.StringVar(&c.Redis.Prefix, "redis-prefix", c.Redis.Prefix, "prefix of every cache key in Redis, so deployments can share one database")
}

func (c Config) validateAdmission() error {
	a := c.Admission
	switch {
	case a.SoftLimit > 0 && a.Rate == 0:
		return fmt.Errorf("--queue-soft-limit scales --ingest-rate down, so it needs --ingest-rate")
	case a.SoftLimit > 0 && a.HardLimit <= a.SoftLimit:
		return fmt.Errorf("--queue-soft-limit %d needs a larger --queue-hard-limit (the depth where the rate reaches its floor), got %d", a.SoftLimit, a.HardLimit)
	}
	if c.PprofListen != "" {
		host, _, err := net.SplitHostPort(c.PprofListen)
		if err != nil {
			return fmt.Errorf("--pprof-listen %q: %w", c.PprofListen, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--pprof-listen %q must be a loopback address (127.0.0.1, ::1 or localhost): profiles expose the process's internals", c.PprofListen)
		}
	}
	return nil
}
