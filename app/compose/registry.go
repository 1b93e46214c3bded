package compose

import (
	"context"
	"fmt"
	"strings"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/lrucache"
	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/adapters/redis"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/ports"
)

// This file is the one registry of what this binary can plug in behind the
// ports: stores, queues and caches. The flags' help, Config.Validate, the
// injectors, skibench and the README test all read these lists, so adding an
// adapter means one entry here and the adapter's own package.

// Env is what a driver gets to open its adapter: the configuration, the
// metrics every adapter reports to, and where the AWS region comes from (which differs between the local and ec2 environments).
type Env struct {
	Config  Config
	Metrics ports.Metrics
	Region  RegionSource
}

// RegionSource says which AWS region to use; the ec2 environment may have
// to ask the instance metadata service, so it is asked only when needed.
type RegionSource func(ctx context.Context) (string, error)

// Stores is what a store driver opens: rides, resorts, and the readiness
// check that proves the store answers (zero Check: nothing to reach).
type Stores struct {
	Rides   ports.RideStore
	Resorts ports.ResortStore
	Probe   app.Probe
}

// StoreDriver is one way to keep rides and resorts (--store NAME).
type StoreDriver struct {
	Name string
	// Check reports settings this store needs that are missing; nil: none.
	Check func(Config) error
	Open  func(ctx context.Context, env Env) (Stores, func(), error)
}

// Queue is what every queue adapter is: publisher, subscriber and depth
// gauge in one.
type Queue interface {
	ports.Publisher
	ports.Subscriber
	ports.QueueStats
}

// QueueDriver is one queue between the API and the persister (--queue NAME).
type QueueDriver struct {
	Name string
	// Shared says whether processes other than this one can reach it, which
	// the api and consumer roles need.
	Shared bool
	Check  func(Config) error
	Open   func(ctx context.Context, env Env) (OpenQueue, func(), error)
}

// OpenQueue is an opened queue, its readiness check (zero Check: the
// queue is in this process) and how the ingest use case's group commit
// publishes to it.
type OpenQueue struct {
	Queue   Queue
	Probe   app.Probe
	Publish app.PublishConfig
}

// CacheDriver is one cache for GET queries (--cache NAME); Open returns a
// nil cache for "none".
type CacheDriver struct {
	Name string
	Open func(ctx context.Context, env Env) (OpenCache, func(), error)
}

// OpenCache is an opened cache (nil: none) and its readiness check (zero
// Check: the cache is in this process).
type OpenCache struct {
	Cache ports.Cache
	Probe app.Probe
}

// StoreDrivers lists the stores: memory, PostgreSQL, then one per DynamoDB
// data model the dynamo adapter has.
var StoreDrivers = append([]StoreDriver{
	{Name: "memory", Open: openMemory},
	{Name: "postgres", Check: checkPostgres, Open: openPostgres},
}, dynamoDrivers()...)

// QueueDrivers lists the queues.
var QueueDrivers = []QueueDriver{
	{Name: "inproc", Open: openInproc},
	{Name: "rabbitmq", Shared: true, Check: checkRabbitMQ, Open: openRabbitMQ},
}

// CacheDrivers lists the caches.
var CacheDrivers = []CacheDriver{
	{Name: "none", Open: func(context.Context, Env) (OpenCache, func(), error) { return OpenCache{}, func() {}, nil }},
	{Name: "memory", Open: openLRU},
	{Name: "redis", Open: openRedis},
}

// StoreNames, QueueNames and CacheNames are the registry's names in order.
func StoreNames() []string {
	return namesOf(StoreDrivers, func(d StoreDriver) string { return d.Name })
}
func QueueNames() []string {
	return namesOf(QueueDrivers, func(d QueueDriver) string { return d.Name })
}
func CacheNames() []string {
	return namesOf(CacheDrivers, func(d CacheDriver) string { return d.Name })
}

func namesOf[D any](ds []D, name func(D) string) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = name(d)
	}
	return out
}

// storeDriver, queueDriver and cacheDriver look a name up; Validate has
// checked it, so a miss is a zero driver that fails when opened.
func storeDriver(name string) StoreDriver {
	return lookup(StoreDrivers, name, func(d StoreDriver) string { return d.Name })
}
func queueDriver(name string) QueueDriver {
	return lookup(QueueDrivers, name, func(d QueueDriver) string { return d.Name })
}
func cacheDriver(name string) CacheDriver {
	return lookup(CacheDrivers, name, func(d CacheDriver) string { return d.Name })
}

func lookup[D any](ds []D, name string, nameOf func(D) string) D {
	for _, d := range ds {
		if nameOf(d) == name {
			return d
		}
	}
	var zero D
	return zero
}

// OpenStore opens the store cfg names, as the service would: skibench and
// the operations commands use it so that they build stores the same way.
func OpenStore(ctx context.Context, env Env) (Stores, func(), error) {
	d := storeDriver(env.Config.Store)
	if d.Open == nil {
		return Stores{}, nil, fmt.Errorf("store %q is not built into this binary; have %s", env.Config.Store, strings.Join(StoreNames(), ", "))
	}
	if env.Metrics == nil {
		env.Metrics = ports.NopMetrics{}
	}
	if env.Region == nil {
		env.Region = configuredRegion(env.Config)
	}
	return d.Open(ctx, env)
}

func openMemory(context.Context, Env) (Stores, func(), error) {
	return Stores{Rides: memory.NewRideStore(), Resorts: memory.NewResortStore()}, func() {}, nil
}

func checkPostgres(c Config) error {
	if strings.TrimSpace(c.Postgres.URL) == "" {
		return fmt.Errorf("--store postgres needs --database-url (or %s): which database to use", EnvName("database-url"))
	}
	if c.Postgres.MaxConns < 0 || c.Postgres.StatementTimeout < 0 || c.Postgres.ConnectTimeout < 0 {
		return fmt.Errorf("--db-max-conns, --db-statement-timeout and --db-connect-timeout must not be negative")
	}
	return nil
}

// openPostgres connects and migrates; a database that is down fails the
// start-up with the adapter's error, which names the URL (password masked).
func openPostgres(ctx context.Context, env Env) (Stores, func(), error) {
	db, err := postgres.Open(ctx, env.Config.Postgres)
	if err != nil {
		return Stores{}, nil, err
	}
	return Stores{Rides: db.Rides(), Resorts: db.Resorts(), Probe: app.Probe{Name: "postgres", Check: db.Ping}}, db.Close, nil
}

// dynamoDrivers is one store per DynamoDB data model: dynamo-<model>.
func dynamoDrivers() []StoreDriver {
	var out []StoreDriver
	for _, model := range dynamo.Models {
		out = append(out, StoreDriver{Name: dynamoStorePrefix + model, Open: openDynamo})
	}
	return out
}

const dynamoStorePrefix = "dynamo-"

// dynamoConfig is the adapter's configuration for the store cfg names: the
// model is the store name's suffix.
func dynamoConfig(cfg Config) dynamo.Config {
	dc := cfg.Dynamo
	dc.Model = strings.TrimPrefix(cfg.Store, dynamoStorePrefix)
	return dc
}

// openDynamo connects and checks, before anything is served, that the
// region is known and the tables exist: a missing dependency stops the
// start with a message naming it.
func openDynamo(ctx context.Context, env Env) (Stores, func(), error) {
	dc := dynamoConfig(env.Config)
	dc.Metrics = env.Metrics // consumed capacity and throttles, by table and operation
	region, err := env.Region(ctx)
	if err != nil {
		return Stores{}, nil, err
	}
	dc.Region = region
	client, err := dynamo.NewClient(ctx, dc)
	if err != nil {
		return Stores{}, nil, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	if err := dynamo.CheckTables(checkCtx, client, dc.TablePrefix, dc.Model); err != nil {
		where := "AWS"
		if dc.Endpoint != "" {
			where = dc.Endpoint
		}
		return Stores{}, nil, fmt.Errorf("DynamoDB (%s, region %s) not usable: %w", where, dc.Region, err)
	}
	rides, err := dynamo.NewRideStore(client, dc)
	if err != nil {
		return Stores{}, nil, err
	}
	resorts := dynamo.NewResortStore(client, dc)
	// Readiness reads one (absent) item of the resort table, which proves
	// the endpoint, the credentials and the table at once.
	return Stores{Rides: rides, Resorts: resorts, Probe: app.Probe{Name: "dynamodb", Check: resorts.Ping}}, func() {}, nil
}

// inprocWaitsForStore says whether the in-process queue answers a POST only
// once the store committed the ride: with any store that outlives the
// process. The memory store dies with the process and the queue, so
// waiting would buy no durability and cost latency.
func inprocWaitsForStore(cfg Config) bool { return cfg.Queue == "inproc" && cfg.Store != "memory" }

func openInproc(_ context.Context, env Env) (OpenQueue, func(), error) {
	var opts []inproc.Option
	if inprocWaitsForStore(env.Config) {
		opts = append(opts, inproc.WaitForAck())
	}
	q := inproc.New(env.Config.QueueCapacity, opts...)
	// The group commit publishes every ride at once, alone (no bound on
	// publishes in flight): a ride waiting for the store waits in the
	// queue, where its capacity bounds it and the depth counts it, and the
	// persister writes all the rides at hand in one commit.
	return OpenQueue{Queue: q}, func() { _ = q.Close() }, nil
}

func checkRabbitMQ(c Config) error {
	if c.AMQP.URL == "" {
		return fmt.Errorf("--queue rabbitmq needs --amqp-url (or %s)", EnvName("amqp-url"))
	}
	return nil
}

// rabbitmqConfig is the adapter's configuration: --queue-capacity bounds
// the ready rides over all shards. The service and the dlq commands must
// agree on it: RabbitMQ refuses to redeclare a queue with other arguments.
func rabbitmqConfig(cfg Config) rabbitmq.Config {
	c := cfg.AMQP
	c.MaxLength = cfg.QueueCapacity
	return c
}

func openRabbitMQ(ctx context.Context, env Env) (OpenQueue, func(), error) {
	c := rabbitmqConfig(env.Config)
	c.Metrics = env.Metrics
	b, err := rabbitmq.Open(ctx, c)
	if err != nil {
		return OpenQueue{}, nil, err
	}
	probe := app.Probe{Name: "rabbitmq", Check: func(ctx context.Context) error {
		_, err := b.Depth(ctx)
		return err
	}}
	// Close lets the persister's last acks through; Disconnect then closes
	// the connections.
	// One message in flight per confirm-mode channel; rides that arrive
	// while all are busy share the next message and its confirm.
	pc := app.PublishConfig{InFlight: c.PublishChannels, MaxRides: c.PublishBatch, Linger: c.PublishLinger}
	return OpenQueue{Queue: b, Probe: probe, Publish: pc}, func() { _ = b.Close(); _ = b.Disconnect() }, nil
}

func openLRU(_ context.Context, env Env) (OpenCache, func(), error) {
	c, err := lrucache.New(env.Config.CacheSize)
	if err != nil {
		return OpenCache{}, nil, err
	}
	return OpenCache{Cache: c}, func() {}, nil
}

func openRedis(ctx context.Context, env Env) (OpenCache, func(), error) {
	c, err := redis.New(ctx, env.Config.Redis)
	if err != nil {
		return OpenCache{}, nil, fmt.Errorf("--cache redis: %w", err)
	}
	return OpenCache{Cache: c, Probe: app.Probe{Name: "redis", Check: c.Ping}}, func() { _ = c.Close() }, nil
}
