package app

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Config is everything the service is told at start-up. Every field is a
// flag with an environment-variable equivalent (SKI_ and the flag name in
// upper snake case); a flag on the command line wins over the variable.
type Config struct {
	// Profile names a set of defaults for a deployment (profile.go): ""
	// for none, "ec2" for the AWS production layout.
	Profile         string
	Listen          string
	Role            string
	Store           string
	Queue           string
	QueueCapacity   int
	AMQP            AMQPConfig
	Persister       PersisterConfig
	ShutdownTimeout time.Duration
	LogFormat       string
	LogLevel        string
	SeedDemo        bool
	Postgres        PostgresConfig
	Dynamo          DynamoConfig
	Admission       AdmissionConfig
	Breaker         BreakerConfig
	Cache           string
	CacheTTL        time.Duration
	CacheSize       int
	RedisURL        string
	RedisPrefix     string
	PprofListen     string
}

// PostgresConfig is what --store postgres needs. It is app's own type so
// that only the injector files depend on the adapter; inject_postgres.go
// maps it onto postgres.Config.
type PostgresConfig struct {
	// URL is the libpq connection string. There is no default: a
	// production service must be told which database it owns.
	URL              string
	MaxConns         int
	StatementTimeout time.Duration
	ConnectTimeout   time.Duration
	Schema           string
}

// DynamoConfig is what the DynamoDB stores (--store dynamo-adopted,
// dynamo-abandoned or dynamo-counters) need; credentials come from the AWS SDK's default chain
// (AWS_ACCESS_KEY_ID..., a profile, or a role), never from here.
type DynamoConfig struct {
	Region           string
	Endpoint         string
	TablePrefix      string
	WriteConcurrency int
}

// The choices a Config may name.
var (
	Stores = []string{"memory", "postgres", "dynamo-adopted", "dynamo-abandoned", "dynamo-counters", "dynamo-sharded"}
	Queues = []string{"inproc", "rabbitmq"}
	Roles  = []string{"all", "api", "consumer"}
	Caches = []string{"none", "memory", "redis"}
)

// DefaultConfig is the configuration with nothing set: in memory, on :8080.
func DefaultConfig() Config {
	return Config{
		Listen:        ":8080",
		Role:          "all",
		Store:         "memory",
		Queue:         "inproc",
		QueueCapacity: 100_000,
		AMQP: AMQPConfig{
			URL: "amqp://guest:guest@127.0.0.1:5672/", Prefix: "skidata", Shards: 1, QueueType: "quorum",
			Prefetch: 500, DeliveryLimit: 5, PublishChannels: 8, PublishTimeout: 5 * time.Second,
		},
		Persister:       PersisterConfig{BatchSize: 500, Linger: 20 * time.Millisecond, RetryFor: 30 * time.Second},
		ShutdownTimeout: 30 * time.Second,
		LogFormat:       "text",
		LogLevel:        "info",
		SeedDemo:        true,
		Postgres:        PostgresConfig{StatementTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second},
		Dynamo:          DynamoConfig{WriteConcurrency: 8},
		Breaker:         BreakerConfig{Failures: 5, OpenFor: 2 * time.Second},
		Cache:           "none",
		CacheTTL:        5 * time.Second,
		CacheSize:       100_000,
		RedisURL:        "redis://127.0.0.1:6379/0",
		RedisPrefix:     "skidata:",
	}
}

// RegisterFlags binds the config's fields to flags on fs, defaults from c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Profile, "profile", c.Profile, "deployment profile whose defaults to apply before the environment and flags: "+strings.Join(ProfileNames(), "|")+" (empty: none)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address the HTTP server listens on")
	fs.StringVar(&c.Role, "role", c.Role, "what this process does: "+strings.Join(Roles, "|")+" (api only publishes, consumer only persists)")
	fs.StringVar(&c.Store, "store", c.Store, "where rides are kept: "+strings.Join(Stores, "|"))
	fs.StringVar(&c.Queue, "queue", c.Queue, "queue between the API and the persister: "+strings.Join(Queues, "|"))
	fs.IntVar(&c.QueueCapacity, "queue-capacity", c.QueueCapacity, "most rides the queue holds waiting (rabbitmq: ready rides over all shards); beyond it POST answers 503")
	fs.StringVar(&c.AMQP.URL, "amqp-url", c.AMQP.URL, "RabbitMQ URL (--queue rabbitmq)")
	fs.StringVar(&c.AMQP.Prefix, "amqp-prefix", c.AMQP.Prefix, "prefix of the RabbitMQ queue and exchange names")
	fs.IntVar(&c.AMQP.Shards, "amqp-shards", c.AMQP.Shards, "RabbitMQ queues rides are spread over by skier")
	fs.StringVar(&c.AMQP.QueueType, "amqp-queue-type", c.AMQP.QueueType, "RabbitMQ queue type: quorum|classic")
	fs.IntVar(&c.AMQP.Prefetch, "amqp-prefetch", c.AMQP.Prefetch, "unacknowledged rides the persister takes ahead per RabbitMQ queue")
	fs.IntVar(&c.AMQP.DeliveryLimit, "amqp-delivery-limit", c.AMQP.DeliveryLimit, "deliveries before a failing ride goes to the dead-letter queue")
	fs.IntVar(&c.AMQP.PublishChannels, "amqp-publish-channels", c.AMQP.PublishChannels, "confirm-mode channels publishes are spread over")
	fs.DurationVar(&c.AMQP.PublishTimeout, "amqp-publish-timeout", c.AMQP.PublishTimeout, "bound on one publish to RabbitMQ, confirm included")
	fs.IntVar(&c.Persister.BatchSize, "batch-size", c.Persister.BatchSize, "most rides the persister writes in one batch")
	fs.DurationVar(&c.Persister.Linger, "batch-linger", c.Persister.Linger, "how long a partial batch waits for more rides")
	fs.DurationVar(&c.Persister.RetryFor, "batch-retry-for", c.Persister.RetryFor, "how long a failing batch is retried before it goes back to the queue")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "on SIGTERM, how long to wait for requests to finish and the queue to drain")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text|json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug|info|warn|error")
	fs.BoolVar(&c.SeedDemo, "seed-demo", c.SeedDemo, "load the ten demo resorts when the store has none")
	fs.StringVar(&c.Postgres.URL, "database-url", c.Postgres.URL, "PostgreSQL connection string for --store postgres, e.g. postgres://user:pass@host:5432/db?sslmode=require")
	fs.IntVar(&c.Postgres.MaxConns, "db-max-conns", c.Postgres.MaxConns, "most connections in the PostgreSQL pool (0: the larger of 4 and the CPU count)")
	fs.DurationVar(&c.Postgres.StatementTimeout, "db-statement-timeout", c.Postgres.StatementTimeout, "server-side limit on each PostgreSQL statement (0: the server's setting)")
	fs.DurationVar(&c.Postgres.ConnectTimeout, "db-connect-timeout", c.Postgres.ConnectTimeout, "limit on each PostgreSQL connection attempt")
	fs.StringVar(&c.Postgres.Schema, "db-schema", c.Postgres.Schema, "PostgreSQL schema holding the tables, created if missing (empty: the server's search_path)")
	fs.StringVar(&c.Dynamo.Region, "dynamo-region", c.Dynamo.Region, "DynamoDB region (empty: the AWS SDK's default, AWS_REGION)")
	fs.StringVar(&c.Dynamo.Endpoint, "dynamo-endpoint", c.Dynamo.Endpoint, "DynamoDB endpoint URL, for a local server such as dynalite (empty: AWS)")
	fs.StringVar(&c.Dynamo.TablePrefix, "dynamo-table-prefix", c.Dynamo.TablePrefix, "put before the table names: <prefix>skierTable, <prefix>resortTable")
	fs.IntVar(&c.Dynamo.WriteConcurrency, "dynamo-write-concurrency", c.Dynamo.WriteConcurrency, "DynamoDB write requests kept in flight per batch")
	c.registerAdmissionFlags(fs)
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

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	for _, ch := range []struct {
		name, value string
		allowed     []string
	}{
		{"store", c.Store, Stores}, {"queue", c.Queue, Queues}, {"role", c.Role, Roles},
		{"profile", c.Profile, append([]string{""}, ProfileNames()...)},
		{"log-format", c.LogFormat, []string{"text", "json"}},
		{"log-level", c.LogLevel, []string{"debug", "info", "warn", "error"}},
		{"cache", c.Cache, Caches},
	} {
		if !slices.Contains(ch.allowed, ch.value) {
			return fmt.Errorf("--%s %q is not one of %s", ch.name, ch.value, strings.Join(ch.allowed, ", "))
		}
	}
	if c.Role != "all" && c.Queue == "inproc" {
		return fmt.Errorf("--role %s needs a queue shared between processes; the in-process queue works only with --role all", c.Role)
	}
	if c.Persister.BatchSize < 1 {
		return fmt.Errorf("--batch-size must be at least 1, got %d", c.Persister.BatchSize)
	}
	if c.Persister.Linger <= 0 {
		return fmt.Errorf("--batch-linger must be positive, got %s", c.Persister.Linger)
	}
	if c.Store == "postgres" && strings.TrimSpace(c.Postgres.URL) == "" {
		return fmt.Errorf("--store postgres needs --database-url (or %s): which database to use", EnvName("database-url"))
	}
	if c.Postgres.MaxConns < 0 || c.Postgres.MaxConns > math.MaxInt32 {
		return fmt.Errorf("--db-max-conns must be between 0 and %d, got %d", math.MaxInt32, c.Postgres.MaxConns)
	}
	if c.Postgres.StatementTimeout < 0 || c.Postgres.ConnectTimeout < 0 {
		return fmt.Errorf("--db-statement-timeout and --db-connect-timeout must not be negative")
	}
	if c.QueueCapacity < 1 {
		return fmt.Errorf("--queue-capacity must be at least 1, got %d", c.QueueCapacity)
	}
	return c.validateAdmission()
}

// AMQPConfig configures the RabbitMQ queue (--queue rabbitmq).
type AMQPConfig struct {
	URL             string
	Prefix          string
	Shards          int
	QueueType       string
	Prefetch        int
	DeliveryLimit   int
	PublishChannels int
	PublishTimeout  time.Duration
}

// RunsAPI reports whether this process serves the API.
func (c Config) RunsAPI() bool { return c.Role != "consumer" }

// RunsConsumer reports whether this process persists rides.
func (c Config) RunsConsumer() bool { return c.Role != "api" }
