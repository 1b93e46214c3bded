package nemesis

import (
	"context"
	"strings"
)

// Mode is one shape of the service a run puts under faults.
type Mode struct {
	Name  string
	Queue backend
	Store backend
	// Split runs the API and the consumer as two processes (--role api,
	// --role consumer), as production does; otherwise one (--role all).
	Split bool
	// Reads is what the docs promise of a read during the run, which the
	// checker holds.
	Reads Reads
}

// Modes are the modes `skiload nemesis` knows, in the order it runs them.
var Modes = []Mode{
	{Name: "inproc-postgres", Queue: inprocQueue, Store: postgresStore, Reads: AfterCommit},
	{Name: "rabbitmq-postgres", Queue: rabbitQueue(1), Store: postgresStore, Split: true},
	{Name: "rabbitmq-cluster", Queue: rabbitQueue(3), Store: postgresStore, Split: true},
	{Name: "sqs-postgres", Queue: sqsQueue, Store: postgresStore, Split: true},
	{Name: "sqs-dynamo", Queue: sqsQueue, Store: dynamoStore, Split: true},
}

// backend is a queue or a store as a mode runs it: it starts the servers
// it needs, in the run's directories and on its ports.
type backend func(ctx context.Context, env env) (*started, error)

// env is what a backend may need from the run.
type env struct {
	rabbitmqScript string
	skiapi, logs   string
	say            func(format string, args ...any)
}

// started is a backend up and running.
type started struct {
	servers []server
	// flags are skiapi's flags that reach the servers at addrs: a
	// process's links to them, in the servers' order.
	flags func(addrs []string) []string
	// prepare is skiapi commands run once, before the processes start,
	// against the servers directly (a store's resorts).
	prepare [][]string
	// environ is what every skiapi process, and prepare, needs in its
	// environment (a stand-in's credentials).
	environ []string
	// kinds are fault kinds of the backend's own, beyond the processes',
	// the links' and the restarts (SQS throttling).
	kinds []kind
	// drained, when set, says from the queue's server itself what the
	// queue still holds ("" when nothing), where a process's /readyz
	// may report a depth older than the load's end.
	drained func(ctx context.Context) string
	// rides reads what a store holds, from the store itself.
	rides func(ctx context.Context) (Stored, error)
	// stop stops the servers for good, keeping their logs in logDir.
	stop func(logDir string) error
}

// inprocQueue is the in-process queue: no server.
func inprocQueue(context.Context, env) (*started, error) {
	return &started{
		flags: func([]string) []string { return []string{"--queue", "inproc"} },
		stop:  func(string) error { return nil },
	}, nil
}

// rabbitQueue is RabbitMQ with quorum queues on nodes of the run's own:
// every process is given every node, each through its own link.
func rabbitQueue(nodes int) backend {
	return func(ctx context.Context, e env) (*started, error) {
		c, servers, err := startRabbit(ctx, e.rabbitmqScript, nodes)
		if err != nil {
			return nil, err
		}
		return &started{
			servers: servers,
			flags: func(addrs []string) []string {
				urls := make([]string, len(addrs))
				for i, a := range addrs {
					urls[i] = amqpURL(a)
				}
				return []string{"--queue", "rabbitmq", "--amqp-url", strings.Join(urls, ","), "--amqp-prefix", "nemesis", "--amqp-queue-type", "quorum"}
			},
			stop: c.stop,
		}, nil
	}
}

// postgresStore is PostgreSQL, an instance of the run's own, its demo
// resorts seeded before the processes start.
func postgresStore(ctx context.Context, _ env) (*started, error) {
	s, err := startPostgres(ctx)
	if err != nil {
		return nil, err
	}
	return &started{
		servers: []server{s},
		flags: func(addrs []string) []string {
			return []string{"--store", "postgres", "--database-url", s.url(addrs[0]), "--db-schema", Schema}
		},
		prepare: [][]string{{"seed", "--store", "postgres", "--database-url", s.url(s.addr()), "--db-schema", Schema}},
		rides:   s.rides,
		stop:    s.stop,
	}, nil
}
