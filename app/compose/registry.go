package compose

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/awssecrets"
	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/lrucache"
	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/adapters/redis"
	"github.com/skidata/skidata/adapters/sqs"
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
	// PublishWaitsForStore is set by OpenQueue from the drivers' entries
	// (Config.postWaitsForStore): a queue that is not durable then answers
	// a publish only once the store holds its rides.
	PublishWaitsForStore bool
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

// StoreDriver is one way to keep rides and resorts (--store NAME). What
// the service does differently from one store to another is said here, by
// the entry's fields, never by testing its name.
type StoreDriver struct {
	Name string
	// Durable says the store keeps its rides when this process ends.
	// Behind a queue that does not (QueueDriver.Durable), a POST then waits
	// for the store (Config.postWaitsForStore); `skiapi seed` refuses a
	// store that is not durable.
	Durable bool
	// Check reports settings this store needs that are missing; nil: none.
	Check func(Config) error
	Open  func(ctx context.Context, deps Deps) (OpenedStore, func(), error)
	// Migrate applies the store's pending schema migrations and returns
	// the version reached (`skiapi migrate`); nil: it has no schema of its
	// own to migrate.
	Migrate func(ctx context.Context, c Config) (version int, err error)
	// Tables creates and describes the store's tables (`skiapi tables`);
	// nil: it has none to manage.
	Tables *TableCommands
}

// TableCommands are what `skiapi tables create|describe` do to a store's
// tables.
type TableCommands struct {
	// Create creates the tables and indexes the store needs and returns
	// once they are usable; tables that exist are left as they are.
	Create func(ctx context.Context, c Config) error
	// Describe reports the tables as the store's service sees them.
	Describe func(ctx context.Context, c Config) (string, error)
}

// Queue is what every queue adapter is: publisher, subscriber and depth
// gauge in one.
type Queue interface {
	ports.Publisher
	ports.Subscriber
	ports.QueueStats
}

// QueueDriver is one queue between the API and the persister (--queue
// NAME). As for stores, what differs from one queue to another is said by
// the entry's fields.
type QueueDriver struct {
	Name string
	// Shared says whether processes other than this one can reach it, which
	// the api and consumer roles need.
	Shared bool
	// Durable says a message the queue has taken survives a crash of this
	// process. In front of a durable store, a queue that is not makes each
	// POST wait until the store holds its ride (Config.postWaitsForStore),
	// so that a 201 means the same whatever the queue.
	Durable bool
	// GroupCommit is how the ingest use case's group commit publishes to
	// this queue, from the configuration (Config.Publish: --publish-batch,
	// --publish-linger, --publish-linger-gap) and the queue's own bounds:
	// how many messages it takes in flight at once, and how many rides one
	// message holds. A queue that bills per request can fill its messages
	// to what one holds (for SQS, the rides that fit in 64 KiB) in place
	// of --publish-batch. nil: the queue gains nothing from fuller
	// messages, and each ride goes at once, alone.
	GroupCommit func(Config) app.PublishConfig
	Check       func(Config) error
	Open        func(ctx context.Context, deps Deps) (OpenedQueue, func(), error)
	// DeadLetters opens the queue's dead-letter queue (`skiapi dlq`); nil:
	// the queue keeps none.
	DeadLetters func(ctx context.Context, c Config) (DeadLetterQueue, func(), error)
	// CreateQueues makes the queues the service needs, or sets those that
	// exist to the configuration, and says what it did (`skiapi queues
	// create`); nil: the queue needs none made beforehand (it is in this
	// process, or declares its own when it connects).
	CreateQueues func(ctx context.Context, c Config) (string, error)
}

// DeadLetterQueue is where a queue keeps the rides it gave up on.
type DeadLetterQueue interface {
	// DLQList returns up to limit dead letters without removing them.
	DLQList(ctx context.Context, limit int) ([]ports.DeadLetter, error)
	// DLQReplay moves every readable dead letter back to the ride queue
	// and returns how many rides it moved.
	DLQReplay(ctx context.Context) (int, error)
}

// OpenedQueue is an opened queue and its readiness check (zero Check: the
// queue is in this process).
type OpenedQueue struct {
	Queue Queue
	Probe app.Probe
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
	{Name: "postgres", Durable: true, Check: checkPostgres, Open: openPostgres, Migrate: migratePostgres},
}, dynamoDrivers()...)

// QueueDrivers lists the queues.
var QueueDrivers = []QueueDriver{
	{Name: "inproc", Open: openInproc},
	{
		Name: "rabbitmq", Shared: true, Durable: true, GroupCommit: rabbitMQGroupCommit,
		Check: checkRabbitMQ, Open: openRabbitMQ, DeadLetters: openRabbitMQDeadLetters,
	},
	{
		Name: "sqs", Shared: true, Durable: true, GroupCommit: sqsGroupCommit,
		Check: checkSQS, Open: openSQS, DeadLetters: openSQSDeadLetters, CreateQueues: createSQSQueues,
	},
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

// StoreNamesWhere and QueueNamesWhere are the names of the drivers that
// have a property, for messages that say which to choose.
func StoreNamesWhere(has func(StoreDriver) bool) []string {
	return namesOf(slices.DeleteFunc(slices.Clone(StoreDrivers), func(d StoreDriver) bool { return !has(d) }), func(d StoreDriver) string { return d.Name })
}
func QueueNamesWhere(has func(QueueDriver) bool) []string {
	return namesOf(slices.DeleteFunc(slices.Clone(QueueDrivers), func(d QueueDriver) bool { return !has(d) }), func(d QueueDriver) string { return d.Name })
}

// StoreOf and QueueOf are the drivers the configuration names (a zero
// driver for a name not registered, which Validate refuses).
func StoreOf(c Config) StoreDriver { return storeDriver(c.Store) }
func QueueOf(c Config) QueueDriver { return queueDriver(c.Queue) }

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
	deps.PublishWaitsForStore = deps.Config.postWaitsForStore()
	if deps.Metrics == nil {
		deps.Metrics = ports.NopMetrics{}
	}
	if deps.Region == nil {
		deps.Region = configuredRegion(deps.Config)
	}
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

// postWaitsForStore says whether a POST is answered only once the store
// holds its ride: when the store outlives this process and the queue does
// not. A 201 then means the ride survives a crash, as it does with a
// durable queue. The memory store dies with the process, so waiting for
// it would buy nothing. It is the one place this is decided: the queue
// (told by OpenQueue) waits for the persister's ack, and the persister
// does not linger, since every ride it holds has a POST waiting for it.
func (c Config) postWaitsForStore() bool {
	return storeDriver(c.Store).Durable && !queueDriver(c.Queue).Durable
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

// migratePostgres migrates the database (opening it does) and reads the
// version back, so the answer is what the database holds, not what this
// binary hoped to apply.
func migratePostgres(ctx context.Context, c Config) (int, error) {
	db, err := postgres.Open(ctx, c.Postgres)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.SchemaVersion(ctx)
}

// dynamoDrivers is one store per DynamoDB data model: dynamo-<model>.
func dynamoDrivers() []StoreDriver {
	var out []StoreDriver
	for _, model := range dynamo.Models {
		out = append(out, StoreDriver{Name: dynamoStorePrefix + model, Durable: true, Open: openDynamo, Tables: &dynamoTables})
	}
	return out
}

// dynamoStorePrefix starts the name of every DynamoDB store.
const dynamoStorePrefix = "dynamo-"

// dynamoTables are every DynamoDB model's tables: on-demand billing.
var dynamoTables = TableCommands{
	Create: func(ctx context.Context, c Config) error {
		client, dc, err := dynamoClient(ctx, c)
		if err != nil {
			return err
		}
		return dynamo.CreateTables(ctx, client, dc.TablePrefix, dc.Model)
	},
	Describe: func(ctx context.Context, c Config) (string, error) {
		client, dc, err := dynamoClient(ctx, c)
		if err != nil {
			return "", err
		}
		return dynamo.DescribeTables(ctx, client, dc.TablePrefix, dc.Model)
	},
}

// dynamoClient is the client of a one-shot command on the tables.
func dynamoClient(ctx context.Context, c Config) (*dynamodb.Client, dynamo.Config, error) {
	dc := c.DynamoConfig()
	client, err := dynamo.NewClient(ctx, dc)
	return client, dc, err
}

// DynamoConfig is the DynamoDB adapter's configuration for the store the
// configuration names: the model is the store name's suffix.
func (c Config) DynamoConfig() dynamo.Config {
	dc := c.Dynamo
	dc.Model = strings.TrimPrefix(c.Store, dynamoStorePrefix)
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

func openInproc(_ context.Context, deps Deps) (OpenedQueue, func(), error) {
	var opts []inproc.Option
	if deps.PublishWaitsForStore {
		opts = append(opts, inproc.WaitForAck())
	}
	// The queue has no group commit (QueueDriver.GroupCommit is nil): every
	// ride is published at once, alone, and waits, if it must, in the
	// queue, where its capacity bounds it and the depth counts it; the
	// persister makes the batches.
	q := inproc.New(deps.Config.QueueCapacity, opts...)
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
// bounds the ready messages over all shards, and --publish-batch the rides
// of one message (the dead-letter replay's too). The service and the dlq
// commands must agree on it: RabbitMQ refuses to redeclare a queue with
// other arguments.
// With --amqp-password-secret the broker logs in with the secret's
// password, read through Secrets Manager.
func (c Config) RabbitMQConfig(ctx context.Context) (rabbitmq.Config, error) {
	rc := c.AMQP
	rc.MaxLength = c.QueueCapacity
	rc.PublishBatch = c.Publish.MaxRides
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
	opened, closeQueue := sharedQueue("rabbitmq", b)
	return opened, closeQueue, nil
}

// sharedQueue is a queue other processes reach, opened: readiness reads
// its depth, which proves the connection and the queue at once, and the
// cleanup lets the persister's last settlements through (Close) before it
// disconnects.
func sharedQueue(name string, q interface {
	Queue
	Disconnect() error
}) (OpenedQueue, func()) {
	probe := app.Probe{Name: name, Check: func(ctx context.Context) error {
		_, err := q.Depth(ctx)
		return err
	}}
	return OpenedQueue{Queue: q, Probe: probe}, func() { _ = q.Close(); _ = q.Disconnect() }
}

// rabbitMQGroupCommit is --publish-*, with one message in flight per
// confirm-mode channel: rides that arrive while every channel awaits a
// confirm share the next message and its confirm.
func rabbitMQGroupCommit(c Config) app.PublishConfig {
	pc := c.Publish
	pc.InFlight = c.AMQP.PublishChannels
	return pc
}

// openRabbitMQDeadLetters connects for a one-shot dlq command.
func openRabbitMQDeadLetters(ctx context.Context, c Config) (DeadLetterQueue, func(), error) {
	rc, err := c.RabbitMQConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	b, err := rabbitmq.Open(ctx, rc)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = b.Disconnect() }, nil
}

func checkSQS(c Config) error {
	if err := c.SQSConfig().Validate(); err != nil {
		return fmt.Errorf("--queue sqs: %w", err)
	}
	return nil
}

// SQSConfig is the SQS adapter's configuration: --queue-capacity bounds
// the messages the queue holds (MaxMessages), as it bounds RabbitMQ's
// ready messages, and the region is --dynamo-region (empty: the SDK's,
// AWS_REGION), which the service itself may take from the instance
// instead (openSQS). The service and the queue commands must agree on
// it.
func (c Config) SQSConfig() sqs.Config {
	sc := c.SQS
	sc.MaxMessages = c.QueueCapacity
	sc.Region = c.Dynamo.Region
	return sc
}

// openSQS finds the ride queue and its dead-letter queue before anything
// is served: a queue that is missing stops the start with a message
// saying how to create it.
func openSQS(ctx context.Context, deps Deps) (OpenedQueue, func(), error) {
	c := deps.Config.SQSConfig()
	region, err := deps.Region(ctx)
	if err != nil {
		return OpenedQueue{}, nil, err
	}
	c.Region = region
	c.Metrics = deps.Metrics // requests and billed units by API action, the receive lag, dead letters
	c.Logger = deps.Log
	openCtx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	q, err := sqs.Open(openCtx, c)
	if err != nil {
		return OpenedQueue{}, nil, err
	}
	opened, closeQueue := sharedQueue("sqs", q)
	return opened, closeQueue, nil
}

// sqsGroupCommit fills a message up to what one billed request carries
// (sqs.MaxRidesPerMessage, in place of --publish-batch: every message
// bills a send, a receive and a share of a delete whatever it holds), with
// sqs.PublishInFlight sends at once, lingering --publish-linger but at
// least sqs.MinPublishLinger: RabbitMQ's linger shares a confirm, SQS's
// saves billed requests, and the shorter one suits a broker.
func sqsGroupCommit(c Config) app.PublishConfig {
	pc := c.Publish
	pc.MaxRides = sqs.MaxRidesPerMessage
	pc.InFlight = sqs.PublishInFlight
	pc.Linger = max(pc.Linger, sqs.MinPublishLinger)
	return pc
}

// openSQSDeadLetters finds the queues for a one-shot dlq command.
func openSQSDeadLetters(ctx context.Context, c Config) (DeadLetterQueue, func(), error) {
	q, err := sqs.Open(ctx, c.SQSConfig())
	if err != nil {
		return nil, nil, err
	}
	return q, func() { _ = q.Disconnect() }, nil
}

// createSQSQueues makes the ride queue and its dead-letter queue with the
// redrive policy (`skiapi queues create`), or sets those that exist to
// the configuration.
func createSQSQueues(ctx context.Context, c Config) (string, error) {
	states, err := sqs.CreateQueues(ctx, c.SQSConfig())
	var b strings.Builder
	for _, st := range states {
		switch {
		case st.Created:
			fmt.Fprintf(&b, "created %s (%s)\n", st.Name, st.URL)
		case len(st.Updated) > 0:
			fmt.Fprintf(&b, "%s exists (%s); set %s\n", st.Name, st.URL, strings.Join(st.Updated, ", "))
		default:
			fmt.Fprintf(&b, "%s exists (%s) as configured\n", st.Name, st.URL)
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), err
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
