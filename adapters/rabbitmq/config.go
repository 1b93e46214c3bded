package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/adapters/redact"
	"github.com/skidata/skidata/ports"
)

// Queue types the adapter can declare.
const (
	QueueTypeQuorum  = "quorum"
	QueueTypeClassic = "classic"
)

// MaxPublishBatch is the most rides one message carries (PublishBatch).
const MaxPublishBatch = 4096

// Config is everything Open needs. Zero fields take the defaults below;
// a negative one (but DeliveryLimit) or a PublishBatch above
// MaxPublishBatch is refused rather than replaced.
type Config struct {
	// URL is the AMQP URL, e.g. amqp://guest:guest@127.0.0.1:5672/, or a
	// comma-separated list of them: one per node of a self-managed
	// cluster. Each connection (publishing, consuming) takes the URLs in
	// turn: it starts with the first, and after a node fails (a dial
	// refused, a connection lost) it goes on with the URL after that
	// node's, round robin. A broker behind one endpoint (Amazon MQ) takes
	// one URL.
	URL string
	// Prefix names this deployment's exchanges and queues
	// (<Prefix>.rides.v2.<shard>, <Prefix>.dlx, <Prefix>.dlq). Default
	// "skidata".
	Prefix string
	// Shards spreads rides over this many queues by skierID mod Shards, so
	// one skier's rides stay ordered in one queue. Default 1.
	Shards int
	// QueueType is "quorum" (default: replicated, counts deliveries itself)
	// or "classic".
	QueueType string
	// Prefetch is how many unacknowledged messages (each one ride or a
	// batch of up to PublishBatch) the broker sends each shard's consumer
	// channel ahead of the acks. Default 500.
	Prefetch int
	// MaxLength bounds the ready messages over all shards (each shard holds
	// ceil(MaxLength/Shards)); a publish beyond it is refused with
	// domain.ErrUnavailable. 0: unbounded. A message is one batch of
	// rides, so under load this bounds rides only to MaxLength*PublishBatch.
	MaxLength int
	// DeliveryLimit is how many times a ride is delivered before it is
	// dead-lettered as poison. Default 5; negative: no limit.
	DeliveryLimit int
	// PublishChannels is the size of the pool of confirm-mode channels that
	// publishes are spread over, and the most batch messages in flight
	// (published, not yet confirmed) over all shards. Default 8.
	PublishChannels int
	// PublishBatch is the most rides in a message the adapter makes itself
	// (DLQReplay's), as the ingest's group commit is told for the messages
	// it makes of POSTed rides, so that every message is settled and
	// redelivered in pieces of the same size. Default 256, at most
	// MaxPublishBatch (what Publish takes in one message).
	PublishBatch int
	// PublishTimeout bounds one Publish, confirm included, when the caller's
	// context allows longer. Default 5s.
	PublishTimeout time.Duration
	// ReconnectMaxInterval caps the wait between reconnect attempts.
	// Default 5s.
	ReconnectMaxInterval time.Duration
	// ConnectionName labels this process's connections in the broker's
	// tools (rabbitmqctl list_connections client_properties). Default
	// "skidata".
	ConnectionName string
	// Credentials, when set, gives the user and password every connection
	// logs in with, in place of the URL's (an empty user keeps the first
	// URL's user). It is called at the first dial, and again whenever the
	// broker refuses a login (ACCESS_REFUSED), after which that dial is
	// retried at once: a password rotated at the broker and in its source
	// is taken up at the next reconnect, without a restart. The password
	// stays in memory, outside every URL, log line and error.
	Credentials func(ctx context.Context) (user, password string, err error)
	// Metrics receives the rides the adapter dead-letters itself. Default:
	// none.
	Metrics ports.Metrics
	// Logger receives which node (URL, password masked) each connection
	// reached, and the nodes of a URL list it could not reach. Default:
	// none.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.URL == "" {
		return c, fmt.Errorf("rabbitmq: Config.URL is empty; want e.g. amqp://guest:guest@127.0.0.1:5672/")
	}
	if _, err := ParseURLs(c.URL); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"Shards", int64(c.Shards)}, {"Prefetch", int64(c.Prefetch)}, {"MaxLength", int64(c.MaxLength)},
		{"PublishChannels", int64(c.PublishChannels)}, {"PublishBatch", int64(c.PublishBatch)},
		{"PublishTimeout", int64(c.PublishTimeout)},
		{"ReconnectMaxInterval", int64(c.ReconnectMaxInterval)},
	} {
		if f.value < 0 {
			return c, fmt.Errorf("rabbitmq: Config.%s is negative (%d)", f.name, f.value)
		}
	}
	if c.PublishBatch > MaxPublishBatch {
		return c, fmt.Errorf("rabbitmq: Config.PublishBatch %d is above the most a message holds, %d", c.PublishBatch, MaxPublishBatch)
	}
	if c.Prefix == "" {
		c.Prefix = "skidata"
	}
	if c.Shards == 0 {
		c.Shards = 1
	}
	switch c.QueueType {
	case "":
		c.QueueType = QueueTypeQuorum
	case QueueTypeQuorum, QueueTypeClassic:
	default:
		return c, fmt.Errorf("rabbitmq: Config.QueueType %q: want %q or %q", c.QueueType, QueueTypeQuorum, QueueTypeClassic)
	}
	if c.Prefetch == 0 {
		c.Prefetch = 500
	}
	if c.DeliveryLimit == 0 {
		c.DeliveryLimit = 5
	}
	if c.PublishChannels == 0 {
		c.PublishChannels = 8
	}
	if c.PublishBatch == 0 {
		c.PublishBatch = 256
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.ReconnectMaxInterval == 0 {
		c.ReconnectMaxInterval = 5 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = ports.NopMetrics{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ConnectionName == "" {
		c.ConnectionName = "skidata"
	}
	return c, nil
}

// queueGeneration is part of the ride queues' names. RabbitMQ refuses to
// redeclare a queue with other arguments, so when the arguments change
// (generation 2 added x-dead-letter-strategy at-least-once and
// reject-publish overflow on quorum queues) the queues get new names, and
// the old ones are drained by the previous release (docs/rabbitmq.md,
// "Upgrading").
const queueGeneration = "v2"

// ShardQueue is the name of shard i's queue.
func (c Config) ShardQueue(i int) string {
	return fmt.Sprintf("%s.rides.%s.%d", c.Prefix, queueGeneration, i)
}

// DeadLetterExchange is where poison rides are sent.
func (c Config) DeadLetterExchange() string { return c.Prefix + ".dlx" }

// DeadLetterQueue holds the poison rides until an operator replays them.
func (c Config) DeadLetterQueue() string { return c.Prefix + ".dlq" }

// perShardMaxLength rounds up so the shards together hold at least MaxLength.
func (c Config) perShardMaxLength() int {
	return (c.MaxLength + c.Shards - 1) / c.Shards
}

// redactedURL is the URL fit for an error message: the password masked.
func redactedURL(raw string) string { return redact.Secrets(raw) }

// ParseURLs splits Config.URL (one AMQP URL or a comma-separated list;
// spaces around a comma are ignored) and checks each URL as the client
// library will when it dials, so a mistyped node fails at start instead of
// being skipped at every reconnect. Errors show URLs with the password
// masked.
func ParseURLs(list string) ([]string, error) {
	parts := strings.Split(list, ",")
	urls := make([]string, 0, len(parts))
	for i, u := range parts {
		u = strings.TrimSpace(u)
		if u == "" {
			return nil, fmt.Errorf("rabbitmq: AMQP URL list %q: URL %d of %d is empty", RedactURLs(list), i+1, len(parts))
		}
		if _, err := amqp.ParseURI(u); err != nil {
			what := "AMQP URL"
			if len(parts) > 1 {
				what = fmt.Sprintf("AMQP URL %d of %d", i+1, len(parts))
			}
			return nil, fmt.Errorf("rabbitmq: %s %s: %s", what, redactedURL(u), redact.Secrets(err.Error()))
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// RedactURLs is Config.URL fit for printing: each URL of the list with its
// password masked, separated by ", " (a space, so that masking the printed
// line again masks each URL on its own rather than the whole list as one).
func RedactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, u := range parts {
		parts[i] = redactedURL(strings.TrimSpace(u))
	}
	return strings.Join(parts, ", ")
}
