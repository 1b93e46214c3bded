package compose

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/skidata/skidata/adapters/awssecrets"
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

// Deps is what opening an adapter depends on: the configuration, the
// metrics every adapter reports to, where the AWS region comes from
// (which differs between the local and ec2 environments), and the process
// logger (nil: the adapter logs nothing).
type Deps struct {
	Config  Config
	Metrics ports.Metrics
	Region  RegionSource
	Log     *slog.Logger
}

// RegionSource says which AWS region to use; the ec2 environment may have
// to ask the instance metadata service, so it is asked only when needed.
type RegionSource func(ctx context.Context) (string, error)

// OpenedStore is what a store driver opens: rides, resorts, and the
// readiness check that proves the store answers (zero Check: nothing to
// reach).
type OpenedStore struct {
	Rides   ports.RideStore
	Resorts ports.ResortStore
	Probe   app.Probe
}

// StoreDriver is one way to keep rides and resorts (--store NAME).
type StoreDriver struct {
	Name string
	// Check reports settings this store needs that are missing; nil: none.
	Check func(Config) error
	Open  func(ctx context.Context, deps Deps) (OpenedStore, func(), error)
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
	Open   func(ctx context.Context, deps Deps) (OpenedQueue, func(), error)
}

// OpenedQueue is an opened queue, its readiness check (zero Check: the
// queue is in this process) and how the ingest use case's group commit
// publishes to it.
type OpenedQueue struct {
	Queue   Queue
	Probe   app.Probe
	Publish app.PublishConfig
}

// CacheDriver is one cache for GET queries (--cache NAME); Open returns a
// nil cache for "none".
type CacheDriver struct {
	Name string
	Open func(ctx context.Context, deps Deps) (OpenedCache, func(), error)
}

// OpenedCache is an opened cache (nil: none) and its readiness check (zero
// Check: the cache is in this process).
type OpenedCache struct {
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
	{Name: "none", Open: func(context.Context, Deps) (OpenedCache, func(), error) { return OpenedCache{}, func() {}, nil }},
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
func OpenStore(ctx context.Context, deps Deps) (OpenedStore, func(), error) {
	d := storeDriver(deps.Config.Store)
	if d.Open == nil {
		return OpenedStore{}, nil, fmt.Errorf("store %q is not built into this binary; have %s", deps.Config.Store, strings.Join(StoreNames(), ", "))
	}
	if deps.Metrics == nil {
		deps.Metrics = ports.NopMetrics{}
	}
	if deps.Region == nil {
		deps.Region = configuredRegion(deps.Config)
	}
	return d.Open(ctx, deps)
}

// OpenQueue opens the queue the configuration names.
func OpenQueue(ctx context.Context, deps Deps) (OpenedQueue, func(), error) {
	return queueDriver(deps.Config.Queue).Open(ctx, deps)
}

// OpenCache opens the query cache the configuration names (a nil cache
// for none).
func OpenCache(ctx context.Context, deps Deps) (OpenedCache, func(), error) {
	return cacheDriver(deps.Config.Cache).Open(ctx, deps)
}

func openMemory(context.Context, Deps) (OpenedStore, func(), error) {
	return OpenedStore{Rides: memory.NewRideStore(), Resorts: memory.NewResortStore()}, func() {}, nil
}

func checkPostgres(c Config) error {
	if strings.TrimSpace(c.Postgres.URL) == "" {
		return fmt.Errorf("--store postgres needs --database-url (or %s): which database to use", EnvName("database-url"))
	}
	return nil
}

// openPostgres connects and migrates; a database that is down fails the
// start-up with the adapter's error, which names the URL (password masked).
func openPostgres(ctx context.Context, deps Deps) (OpenedStore, func(), error) {
	db, err := postgres.Open(ctx, deps.Config.Postgres)
	if err != nil {
		return OpenedStore{}, nil, err
	}
	return OpenedStore{Rides: db.Rides(), Resorts: db.Resorts(), Probe: app.Probe{Name: "postgres", Check: db.Ping}}, db.Close, nil
}

// dynamoDrivers is one store per DynamoDB data model: dynamo-<model>.
func dynamoDrivers() []StoreDriver {
	var out []StoreDriver
	for _, model := range dynamo.Models {
		out = append(out, StoreDriver{Name: DynamoStorePrefix + model, Open: openDynamo})
	}
	return out
}

// DynamoStorePrefix starts the name of every DynamoDB store.
const DynamoStorePrefix = "dynamo-"

// DynamoConfig is the DynamoDB adapter's configuration for the store the
// configuration names: the model is the store name's suffix.
func (c Config) DynamoConfig() dynamo.Config {
	dc := c.Dynamo
	dc.Model = strings.TrimPrefix(c.Store, DynamoStorePrefix)
	return dc
}

// openDynamo connects and checks, before anything is served, that the
// region is known and the tables exist: a missing dependency stops the
// start with a message naming it.
func openDynamo(ctx context.Context, deps Deps) (OpenedStore, func(), error) {
	dc := deps.Config.DynamoConfig()
	dc.Metrics = deps.Metrics // consumed capacity and throttles, by table and operation
	region, err := deps.Region(ctx)
	if err != nil {
		return OpenedStore{}, nil, err
	}
	dc.Region = region
	client, err := dynamo.NewClient(ctx, dc)
	if err != nil {
		return OpenedStore{}, nil, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	if err := dynamo.CheckTables(checkCtx, client, dc.TablePrefix, dc.Model); err != nil {
		where := "AWS"
		if dc.Endpoint != "" {
			where = dc.Endpoint
		}
		return OpenedStore{}, nil, fmt.Errorf("DynamoDB (%s, region %s) not usable: %w", where, dc.Region, err)
	}
	rides, err := dynamo.NewRideStore(client, dc)
	if err != nil {
		return OpenedStore{}, nil, err
	}
	resorts := dynamo.NewResortStore(client, dc)
	// Readiness reads one (absent) item of the resort table, which proves
	// the endpoint, the credentials and the table at once.
	return OpenedStore{Rides: rides, Resorts: resorts, Probe: app.Probe{Name: "dynamodb", Check: resorts.Ping}}, func() {}, nil
}

// inprocWaitsForStore says whether the in-process queue answers a POST only
// once the store committed the ride: with any store that outlives the
// process. The memory store dies with the process and the queue, so
// waiting would buy no durability and cost latency.
func inprocWaitsForStore(cfg Config) bool { return cfg.Queue == "inproc" && cfg.Store != "memory" }

func openInproc(_ context.Context, deps Deps) (OpenedQueue, func(), error) {
	opt := inproc.WaitForAck()
	if !inprocWaitsForStore(deps.Config) {
		// The queue gathers each batch (--batch-size, --batch-linger)
		// instead of the persister: see persisterConfig.
		opt = inproc.Gather(deps.Config.Persister.BatchSize, deps.Config.Persister.Linger)
	}
	q := inproc.New(deps.Config.QueueCapacity, opt)
	// The group commit publishes every ride at once, alone (no bound on
	// publishes in flight): a ride waiting for the store waits in the
	// queue, where its capacity bounds it and the depth counts it, and the
	// persister writes all the rides at hand in one commit.
	return OpenedQueue{Queue: q}, func() { _ = q.Close() }, nil
}

func checkRabbitMQ(c Config) error {
	if c.AMQP.URL == "" {
		return fmt.Errorf("--queue rabbitmq needs --amqp-url (or %s)", EnvName("amqp-url"))
	}
	if _, err := rabbitmq.ParseURLs(c.AMQP.URL); err != nil {
		return fmt.Errorf("--amqp-url: %w", err)
	}
	return nil
}

// RabbitMQConfig is the RabbitMQ adapter's configuration: --queue-capacity
// bounds the ready messages over all shards. The service and the dlq
// commands must agree on it: RabbitMQ refuses to redeclare a queue with
// other arguments.
// With --amqp-password-secret the broker logs in with the secret's
// password, read through Secrets Manager.
func (c Config) RabbitMQConfig(ctx context.Context) (rabbitmq.Config, error) {
	rc := c.AMQP
	rc.MaxLength = c.QueueCapacity
	if c.AMQPPasswordSecret != "" {
		s, err := awssecrets.New(ctx, awssecrets.Config{SecretID: c.AMQPPasswordSecret})
		if err != nil {
			return rc, fmt.Errorf("--amqp-password-secret: %w", err)
		}
		rc.Credentials = func(ctx context.Context) (string, string, error) {
			l, err := s.Login(ctx)
			return l.Username, l.Password, err
		}
	}
	return rc, nil
}

func openRabbitMQ(ctx context.Context, deps Deps) (OpenedQueue, func(), error) {
	c, err := deps.Config.RabbitMQConfig(ctx)
	if err != nil {
		return OpenedQueue{}, nil, err
	}
	c.Metrics = deps.Metrics
	c.Logger = deps.Log
	b, err := rabbitmq.Open(ctx, c)
	if err != nil {
		return OpenedQueue{}, nil, err
	}
	probe := app.Probe{Name: "rabbitmq", Check: func(ctx context.Context) error {
		_, err := b.Depth(ctx)
		return err
	}}
	// Close lets the persister's last acks through; Disconnect then closes
	// the connections.
	// One message in flight per confirm-mode channel; rides that arrive
	// while all are busy share the next message and its confirm.
	pc := app.PublishConfig{InFlight: c.PublishChannels, MaxRides: c.PublishBatch, Linger: c.PublishLinger, LingerGap: c.PublishLingerGap}
	return OpenedQueue{Queue: b, Probe: probe, Publish: pc}, func() { _ = b.Close(); _ = b.Disconnect() }, nil
}

func openLRU(_ context.Context, deps Deps) (OpenedCache, func(), error) {
	c, err := lrucache.New(deps.Config.CacheSize)
	if err != nil {
		return OpenedCache{}, nil, err
	}
	return OpenedCache{Cache: c}, func() {}, nil
}

func openRedis(ctx context.Context, deps Deps) (OpenedCache, func(), error) {
	c, err := redis.New(ctx, deps.Config.Redis)
	if err != nil {
		return OpenedCache{}, nil, fmt.Errorf("--cache redis: %w", err)
	}
	return OpenedCache{Cache: c, Probe: app.Probe{Name: "redis", Check: c.Ping}}, func() { _ = c.Close() }, nil
}
