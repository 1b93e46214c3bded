package compose

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skidata/skidata/adapters/breaker"
	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/adapters/redis"
	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/app"
)

// Config is everything the service is told at start-up. Every field is a
// flag with an environment-variable equivalent (SKI_ and the flag name in
// upper snake case); a flag on the command line wins over the variable.
// Each adapter owns its configuration type; Config holds them as they are
// and the flags fill their fields directly, so nothing is mapped twice.
type Config struct {
	Profile       string
	Listen        string
	Role          string
	Store         string
	Queue         string
	QueueCapacity int
	AMQP          rabbitmq.Config
	// AMQPPasswordSecret is the ARN or name of a Secrets Manager secret
	// holding the broker password (or JSON with "username" and
	// "password"): read at start and again when the broker refuses it,
	// and never written anywhere.
	AMQPPasswordSecret string
	// SQS is the SQS adapter's (--sqs-*); its region is DynamoDB's
	// (Deps.Region), its MaxMessages --queue-capacity (Config.SQSConfig).
	SQS sqs.Config
	// Publish is the group commit's (--publish-*): the API side's batcher,
	// as Persister is the consumer side's. A queue's driver entry says how
	// it applies to that queue (QueueDriver.GroupCommit).
	Publish         app.PublishConfig
	Persister       app.PersisterConfig
	ShutdownTimeout time.Duration
	HTTP            HTTPConfig
	LogFormat       string
	LogLevel        string
	Catalog         app.CatalogConfig
	Postgres        postgres.Config
	Dynamo          dynamo.Config
	Admission       app.AdmissionConfig
	// TrustForwardedFor takes a ride's client from the last
	// X-Forwarded-For entry (behind a load balancer that appends it), not
	// from the connection, for the per-client rate limit.
	TrustForwardedFor bool
	Breaker           breaker.Config
	Cache             string
	Query             app.QueryConfig
	CacheSize         int
	Redis             redis.Config
	PprofListen       string
}

// HTTPConfig bounds what one request and one connection may cost the HTTP
// server, and how long requests get at shutdown.
type HTTPConfig struct {
	// ReadTimeout bounds reading a whole request, body included: a client
	// that stalls mid-body is cut off after it.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the answer.
	WriteTimeout time.Duration
	// HandlerTimeout is the deadline of each request's context: a request
	// still waiting on the store or the queue then is answered 503. It is
	// below WriteTimeout, so that the answer can still be written.
	HandlerTimeout time.Duration
	// ShutdownTimeout is how long requests in flight get to finish on
	// SIGTERM before their connections are closed; the queue's drain then
	// gets its own budget (Config.ShutdownTimeout).
	ShutdownTimeout time.Duration
}

// Roles are what one process may do: everything, or one side of the queue.
var Roles = []string{RoleAll, RoleAPI, RoleConsumer}

// The roles.
const (
	RoleAll      = "all"
	RoleAPI      = "api"
	RoleConsumer = "consumer"
)

// DefaultConfig is the configuration with nothing set: in memory, on
// 127.0.0.1:8080. The API takes writes unauthenticated, so by default only
// this machine reaches it; a deployment behind a load balancer listens on
// every interface (--profile ec2, or --listen :8080).
func DefaultConfig() Config {
	return Config{
		Listen:        "127.0.0.1:8080",
		Role:          "all",
		Store:         "memory",
		Queue:         "inproc",
		QueueCapacity: 100_000,
		AMQP: rabbitmq.Config{
			URL: "amqp://guest:guest@127.0.0.1:5672/", Prefix: "skidata", Shards: 1, QueueType: "quorum",
			Prefetch: 500, DeliveryLimit: 5, PublishChannels: 8, PublishTimeout: 5 * time.Second,
		},
		SQS: sqs.Config{Queue: "skidata-rides", Pollers: 2, VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 5},
		// A short linger makes fuller messages, so a broker's confirm (an
		// append and an fsync) is shared by more rides, for a few ms of
		// POST latency; the gap lets a burst of concurrent POSTs that has
		// all arrived go without waiting out the linger (docs/rabbitmq.md,
		// "Group commit and the message as the unit of work").
		Publish:         app.PublishConfig{MaxRides: 256, Linger: 5 * time.Millisecond, LingerGap: time.Millisecond},
		Persister:       app.PersisterConfig{BatchSize: 500, Linger: 20 * time.Millisecond, RetryFor: 30 * time.Second, Writers: 4},
		ShutdownTimeout: 30 * time.Second,
		HTTP:            HTTPConfig{ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, HandlerTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second},
		LogFormat:       "text",
		LogLevel:        "info",
		Catalog:         app.CatalogConfig{SeedDemo: true},
		Postgres:        postgres.Config{StatementTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second},
		Dynamo:          dynamo.Config{WriteConcurrency: 8},
		Breaker:         breaker.Config{Failures: 5, OpenFor: 2 * time.Second},
		Cache:           "none",
		Query:           app.QueryConfig{CacheTTL: 5 * time.Second},
		CacheSize:       100_000,
		Redis:           redis.Config{URL: "redis://127.0.0.1:6379/0", Prefix: "skidata:"},
		// A 429's Retry-After is whole seconds: a closed-loop client a
		// little over the rate would idle a second per refusal. Waiting up
		// to 100 ms for a token spreads such a burst instead.
		Admission: app.AdmissionConfig{MaxWait: 100 * time.Millisecond},
	}
}

// RegisterFlags binds the config's fields to flags on fs, defaults from c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Profile, "profile", c.Profile, "deployment profile whose defaults to apply before the environment and flags: "+strings.Join(ProfileNames(), "|")+" (empty: none)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address the HTTP server listens on (host:port; :8080 is every interface)")
	fs.StringVar(&c.Role, "role", c.Role, "what this process does: "+strings.Join(Roles, "|")+" (api only publishes, consumer only persists)")
	fs.StringVar(&c.Store, "store", c.Store, "where rides are kept: "+strings.Join(StoreNames(), "|"))
	fs.StringVar(&c.Queue, "queue", c.Queue, "queue between the API and the persister: "+strings.Join(QueueNames(), "|"))
	fs.IntVar(&c.QueueCapacity, "queue-capacity", c.QueueCapacity, "most rides the queue holds waiting (rabbitmq: ready messages over all shards, each one ride or a batch; sqs: messages waiting and in flight, as last sampled); beyond it POST answers 503")
	fs.StringVar(&c.AMQP.URL, "amqp-url", c.AMQP.URL, "RabbitMQ URL (--queue rabbitmq); for a self-managed cluster, every node's URL, comma-separated: each connection takes them in turn, moving to the next when its node fails (Amazon MQ: its one endpoint)")
	fs.StringVar(&c.AMQPPasswordSecret, "amqp-password-secret", c.AMQPPasswordSecret, "ARN (or name, with AWS_REGION) of a Secrets Manager secret holding the RabbitMQ password, or JSON {\"username\":...,\"password\":...}; read at start and again when the broker refuses it, in place of the --amqp-url's (empty: the URL's)")
	fs.StringVar(&c.AMQP.Prefix, "amqp-prefix", c.AMQP.Prefix, "prefix of the RabbitMQ queue and exchange names")
	fs.IntVar(&c.AMQP.Shards, "amqp-shards", c.AMQP.Shards, "RabbitMQ queues rides are spread over by skier")
	fs.StringVar(&c.AMQP.QueueType, "amqp-queue-type", c.AMQP.QueueType, "RabbitMQ queue type: quorum|classic")
	fs.IntVar(&c.AMQP.Prefetch, "amqp-prefetch", c.AMQP.Prefetch, "unacknowledged rides the persister takes ahead per RabbitMQ queue")
	fs.IntVar(&c.AMQP.DeliveryLimit, "amqp-delivery-limit", c.AMQP.DeliveryLimit, "deliveries before a failing ride goes to the dead-letter queue (-1: no limit)")
	fs.IntVar(&c.AMQP.PublishChannels, "amqp-publish-channels", c.AMQP.PublishChannels, "confirm-mode channels publishes are spread over")
	fs.DurationVar(&c.AMQP.PublishTimeout, "amqp-publish-timeout", c.AMQP.PublishTimeout, "bound on one publish to RabbitMQ, confirm included")
	fs.StringVar(&c.SQS.Queue, "sqs-queue", c.SQS.Queue, "SQS ride queue's name or URL (--queue sqs); its dead-letter queue is NAME-dlq, beside it (skiapi queues create makes both)")
	fs.StringVar(&c.SQS.Endpoint, "sqs-endpoint", c.SQS.Endpoint, "SQS endpoint URL, for a local stand-in such as fauxqs (empty: AWS, in the region --dynamo-region names)")
	fs.IntVar(&c.SQS.Pollers, "sqs-pollers", c.SQS.Pollers, "goroutines long-polling the SQS queue for the persister (each receive takes up to 10 messages)")
	fs.DurationVar(&c.SQS.VisibilityTimeout, "sqs-visibility-timeout", c.SQS.VisibilityTimeout, "how long a received SQS message stays hidden from other consumers, extended while it is being stored: a consumer that dies has its messages delivered again after this (whole seconds, at most 12h)")
	fs.IntVar(&c.SQS.MaxReceiveCount, "sqs-max-receive-count", c.SQS.MaxReceiveCount, "receives after which SQS moves a message that keeps failing to the dead-letter queue (1 to 1000; skiapi queues create sets it in the queue's redrive policy)")
	fs.IntVar(&c.Publish.MaxRides, "publish-batch", c.Publish.MaxRides, "group commit: most rides POSTed together that share one queue message and its confirm (--queue rabbitmq; 1: one ride per message; sqs fills a message to what one billed request carries)")
	fs.DurationVar(&c.Publish.Linger, "publish-linger", c.Publish.Linger, "group commit: how long a message waits for more rides once it could go (0: never waits; sqs waits at least "+sqs.MinPublishLinger.String()+", each message being billed)")
	fs.DurationVar(&c.Publish.LingerGap, "publish-linger-gap", c.Publish.LingerGap, "group commit: a lingering message goes early once no ride has joined it for this long and it holds more than one ride and at least half as many as the last: a burst of concurrent POSTs goes as soon as it has arrived (0: lingers the whole --publish-linger)")
	fs.IntVar(&c.Persister.BatchSize, "batch-size", c.Persister.BatchSize, "most rides the persister writes in one batch (1 to "+strconv.Itoa(MaxBatchSize)+")")
	fs.DurationVar(&c.Persister.Linger, "batch-linger", c.Persister.Linger, "how long a partial batch waits for more rides")
	fs.DurationVar(&c.Persister.RetryFor, "batch-retry-for", c.Persister.RetryFor, "how long a batch failing with an unexpected error is retried before it goes back to the queue (an unavailable store is retried until it is back; 0: not retried)")
	fs.IntVar(&c.Persister.Writers, "persist-writers", c.Persister.Writers, "batches the persister writes at once")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "on SIGTERM, once HTTP has stopped, how long the queue gets to drain into the store")
	fs.DurationVar(&c.HTTP.ShutdownTimeout, "http-shutdown-timeout", c.HTTP.ShutdownTimeout, "on SIGTERM, how long requests in flight get to finish before their connections are closed")
	fs.DurationVar(&c.HTTP.ReadTimeout, "http-read-timeout", c.HTTP.ReadTimeout, "most time to read one request, body included (a client stalled mid-body is cut off)")
	fs.DurationVar(&c.HTTP.WriteTimeout, "http-write-timeout", c.HTTP.WriteTimeout, "most time from the end of a request's headers to the end of its answer")
	fs.DurationVar(&c.HTTP.HandlerTimeout, "http-handler-timeout", c.HTTP.HandlerTimeout, "deadline of each request's work; past it the answer is 503 (must be below --http-write-timeout)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text|json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug|info|warn|error")
	fs.BoolVar(&c.Catalog.SeedDemo, "seed-demo", c.Catalog.SeedDemo, "load the ten demo resorts when the store has none")
	fs.StringVar(&c.Postgres.URL, "database-url", c.Postgres.URL, "PostgreSQL connection string for --store postgres, e.g. postgres://user:pass@host:5432/db?sslmode=require")
	fs.Var(intFlag[int32]{&c.Postgres.MaxConns}, "db-max-conns", "most connections in the PostgreSQL pool (0: the larger of 4 and the CPU count)")
	fs.DurationVar(&c.Postgres.StatementTimeout, "db-statement-timeout", c.Postgres.StatementTimeout, "server-side limit on each PostgreSQL statement (0: the server's setting)")
	fs.DurationVar(&c.Postgres.ConnectTimeout, "db-connect-timeout", c.Postgres.ConnectTimeout, "limit on each PostgreSQL connection attempt (0: the URL's connect_timeout, else 5s)")
	fs.StringVar(&c.Postgres.Schema, "db-schema", c.Postgres.Schema, "PostgreSQL schema holding the tables, created if missing (empty: the server's search_path)")
	fs.StringVar(&c.Dynamo.Region, "dynamo-region", c.Dynamo.Region, "AWS region of DynamoDB and SQS (empty: the AWS SDK's default, AWS_REGION)")
	fs.StringVar(&c.Dynamo.Endpoint, "dynamo-endpoint", c.Dynamo.Endpoint, "DynamoDB endpoint URL, for a local server such as dynalite (empty: AWS)")
	fs.StringVar(&c.Dynamo.TablePrefix, "dynamo-table-prefix", c.Dynamo.TablePrefix, "put before the table names: <prefix>skierTable, <prefix>resortTable")
	fs.IntVar(&c.Dynamo.WriteConcurrency, "dynamo-write-concurrency", c.Dynamo.WriteConcurrency, "DynamoDB write requests kept in flight per batch")
	// Admission control and the publish circuit breaker.
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
	// The query cache.
	fs.StringVar(&c.Cache, "cache", c.Cache, "cache for GET queries: "+strings.Join(CacheNames(), "|"))
	fs.DurationVar(&c.Query.CacheTTL, "cache-ttl", c.Query.CacheTTL, "how long a cached answer lives (bounds staleness if an invalidation is lost)")
	fs.IntVar(&c.CacheSize, "cache-size", c.CacheSize, "most entries the in-process cache (--cache memory) holds")
	fs.StringVar(&c.Redis.URL, "redis-url", c.Redis.URL, "Redis for --cache redis")
	fs.StringVar(&c.Redis.Prefix, "redis-prefix", c.Redis.Prefix, "prefix of every cache key in Redis, so deployments can share one database")
	// Diagnostics.
	fs.StringVar(&c.PprofListen, "pprof-listen", c.PprofListen, "loopback address for net/http/pprof, e.g. 127.0.0.1:6060; empty = off")
}

// EnvName is the environment variable that sets a flag: SKI_BATCH_SIZE for
// --batch-size.
func EnvName(flagName string) string {
	return "SKI_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag not given on the command line from its
// environment variable, if that is set.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := lookup(EnvName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, serr)
			}
		}
	})
	return err
}

// ParseConfig reads flags, then the environment, then the profile's
// defaults (ParseConfigSources).
func ParseConfig(fs *flag.FlagSet, args []string) (Config, error) {
	c, _, err := ParseConfigSources(fs, args, os.LookupEnv)
	return c, err
}

// ChoiceError is a flag given a value that is not one of its choices.
type ChoiceError struct {
	Flag, Value string
	Allowed     []string
}

func (e *ChoiceError) Error() string {
	return fmt.Sprintf("--%s %q is not one of %s", e.Flag, e.Value, strings.Join(e.Allowed, ", "))
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	for _, ch := range []struct {
		name, value string
		allowed     []string
	}{
		{"store", c.Store, StoreNames()}, {"queue", c.Queue, QueueNames()}, {"role", c.Role, Roles},
		{"profile", c.Profile, append([]string{""}, ProfileNames()...)},
		{"log-format", c.LogFormat, []string{"text", "json"}},
		{"log-level", c.LogLevel, []string{"debug", "info", "warn", "error"}},
		{"cache", c.Cache, CacheNames()},
	} {
		if !slices.Contains(ch.allowed, ch.value) {
			return &ChoiceError{Flag: ch.name, Value: ch.value, Allowed: ch.allowed}
		}
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		msg := fmt.Sprintf("--listen %q is not a host:port address", c.Listen)
		if c.Listen != "" && strings.Trim(c.Listen, "0123456789") == "" {
			msg += fmt.Sprintf("; did you mean --listen 127.0.0.1:%s?", c.Listen)
		}
		return errors.New(msg)
	}
	if c.Role != RoleAll && !queueDriver(c.Queue).Shared {
		return fmt.Errorf("--role %s needs a queue shared between processes; --queue %s works only with --role all", c.Role, c.Queue)
	}
	if err := c.validateNumbers(); err != nil {
		return err
	}
	if err := c.validateURLs(); err != nil {
		return err
	}
	if c.HTTP.HandlerTimeout >= c.HTTP.WriteTimeout {
		return fmt.Errorf("--http-handler-timeout (%s) must be below --http-write-timeout (%s), so that a request past its deadline can still be answered", c.HTTP.HandlerTimeout, c.HTTP.WriteTimeout)
	}
	if check := storeDriver(c.Store).Check; check != nil {
		if err := check(c); err != nil {
			return err
		}
	}
	if check := queueDriver(c.Queue).Check; check != nil {
		if err := check(c); err != nil {
			return err
		}
	}
	return c.validateAdmission()
}

// intFlag is a flag for an adapter's int32 or uint32 setting (flag has
// neither), refusing values that do not fit.
type intFlag[T int32 | uint32] struct{ p *T }

func (f intFlag[T]) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*f.p), 10)
}

func (f intFlag[T]) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return numError(err)
	}
	if int64(T(v)) != v {
		return errors.New("value out of range")
	}
	*f.p = T(v)
	return nil
}

// numError says what flag's own parsers say: "parse error" or "value out of range".
func numError(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return errors.New("value out of range")
	}
	return errors.New("parse error")
}
