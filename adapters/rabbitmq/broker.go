package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

var (
	_ ports.Publisher  = (*Broker)(nil)
	_ ports.Subscriber = (*Broker)(nil)
	_ ports.QueueStats = (*Broker)(nil)
)

// Broker is one process's link to RabbitMQ: a publishing connection with a
// pool of confirm-mode channels, and (once Deliveries is called) a consuming
// connection. Both reconnect by themselves.
type Broker struct {
	cfg Config
	url string // the URL list, redacted, for messages

	urls   []string     // Config.URL split: one per node
	masked []string     // urls, redacted, for messages and logs
	next   atomic.Int64 // index in urls the next dial starts at

	stop    context.CancelFunc // ends the reconnect loop
	stopped <-chan struct{}    // closed by stop
	wg      sync.WaitGroup

	nextShard atomic.Uint64 // the shard queue of the next message, in turn
	msgSeq    atomic.Uint64 // numbers this process's messages
	startID   string        // tells this process's message ids from a previous run's

	meanMu    sync.Mutex
	meanRides float64 // rides per message lately, for Depth; 0: none seen

	mu      sync.RWMutex
	pub     *pubSession // nil while the broker is unreachable
	pubErr  error       // why pub is nil
	blocked atomic.Bool // the broker asked us to stop publishing (resource alarm)
	rr      atomic.Uint64

	subMu sync.Mutex
	sub   *consumer

	credMu sync.Mutex
	cred   *amqp.PlainAuth // from Config.Credentials; nil: not read yet, or none
}

// pubSession is one publishing connection and its channel pool.
type pubSession struct {
	conn  *amqp.Connection
	node  int // index in Broker.urls of the node it is connected to
	chans []*pubChan
}

// Open connects, declares the topology and starts the reconnect loop. A
// broker unreachable now is an error naming the URL (password masked) rather
// than a retry loop, so a misconfigured process fails at start.
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, url: RedactURLs(cfg.URL), startID: strconv.FormatInt(time.Now().UnixNano(), 36)}
	b.urls, _ = ParseURLs(cfg.URL) // checked by withDefaults
	for _, u := range b.urls {
		b.masked = append(b.masked, redactedURL(u))
	}
	s, err := b.dialPublisher(ctx)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open %s: %w", b.url, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	b.stop, b.stopped = stop, runCtx.Done()
	b.setPub(s, nil)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.keepPublisher(runCtx, s)
	}()
	return b, nil
}

// dial opens a connection labelled for the broker's tools; role tells the
// publishing and consuming connections apart. With a URL list it tries each
// node once, starting at the cursor (the node after the one that last
// failed), and returns the index of the node it reached; only when every
// node failed is it an error (naming each).
func (b *Broker) dial(ctx context.Context, role string) (*amqp.Connection, int, error) {
	start := int(b.next.Load())
	var errs []error
	for i := range len(b.urls) {
		node := (start + i) % len(b.urls)
		conn, err := b.dialNode(ctx, role, node)
		if err == nil {
			b.cfg.Logger.Info("rabbitmq connected", "role", role, "url", b.masked[node], "node", node+1, "nodes", len(b.urls))
			return conn, node, nil
		}
		b.failed(node)
		errs = append(errs, err)
		if len(b.urls) > 1 {
			b.cfg.Logger.Warn("rabbitmq node unreachable, trying the next", "role", role, "url", b.masked[node], "node", node+1, "nodes", len(b.urls), "err", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, -1, errs[0]
	}
	return nil, -1, errors.Join(errs...)
}

// failed moves the cursor past node, unless it has moved already (the other
// connection saw the same node fail first): the next dial starts with the
// node after it.
func (b *Broker) failed(node int) {
	b.next.CompareAndSwap(int64(node), int64((node+1)%len(b.urls)))
}

// dialNode opens a connection to one node of the URL list. With
// Config.Credentials it logs in with them; when the broker refuses the
// login it reads them again and, if they changed, dials once more.
func (b *Broker) dialNode(ctx context.Context, role string, node int) (*amqp.Connection, error) {
	if b.cfg.Credentials == nil {
		return b.dialAs(ctx, role, node, nil)
	}
	auth, err := b.credentials(ctx, nil)
	if err != nil {
		return nil, err
	}
	conn, err := b.dialAs(ctx, role, node, auth)
	if !loginRefused(err) {
		return conn, err
	}
	fresh, rerr := b.credentials(ctx, auth)
	if rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if *fresh == *auth {
		return nil, err
	}
	b.cfg.Logger.Info("rabbitmq login refused; retrying with the credentials read again", "role", role, "url", b.masked[node])
	return b.dialAs(ctx, role, node, fresh)
}

// credentials returns the login Config.Credentials gives: the one read
// before, unless there is none yet or stale is it (the broker refused
// it), in which case they are read again. The URL's user stands in for
// an empty one.
func (b *Broker) credentials(ctx context.Context, stale *amqp.PlainAuth) (*amqp.PlainAuth, error) {
	b.credMu.Lock()
	defer b.credMu.Unlock()
	if b.cred != nil && b.cred != stale {
		return b.cred, nil // read already, or read again by the other connection
	}
	ctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	user, password, err := b.cfg.Credentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: rabbitmq: read the broker credentials: %w", domain.ErrUnavailable, err)
	}
	if password == "" {
		return nil, fmt.Errorf("rabbitmq: the broker credentials' password is empty")
	}
	if user == "" {
		uri, _ := amqp.ParseURI(b.urls[0]) // checked by withDefaults
		user = uri.Username
	}
	b.cred = &amqp.PlainAuth{Username: user, Password: password}
	return b.cred, nil
}

// credentialsTimeout bounds one read of Config.Credentials: a secret
// store that does not answer fails the dial, which the reconnect loop
// retries, instead of holding every connection's dial.
const credentialsTimeout = 10 * time.Second

// loginRefused says whether err is the broker refusing a user name or
// password.
func loginRefused(err error) bool {
	var ae *amqp.Error
	return errors.Is(err, amqp.ErrCredentials) || (errors.As(err, &ae) && ae.Code == amqp.AccessRefused)
}

// dialAs opens a connection to one node, logging in as auth when it is
// set, else with the URL's user and password.
func (b *Broker) dialAs(ctx context.Context, role string, node int, auth *amqp.PlainAuth) (*amqp.Connection, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(b.cfg.ConnectionName + "." + role)
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	var sasl []amqp.Authentication
	if auth != nil {
		sasl = []amqp.Authentication{auth}
	}
	conn, err := amqp.DialConfig(b.urls[node], amqp.Config{
		SASL:       sasl,
		Properties: props,
		Heartbeat:  10 * time.Second,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			return d.DialContext(ctx, network, addr)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: rabbitmq broker at %s is unreachable: %w", domain.ErrUnavailable, b.masked[node], err)
	}
	return conn, nil
}

// declare creates the topology if missing; declaring is idempotent, and it
// runs on every (re)connect so a broker that lost its definitions gets them
// back before the first publish.
func (b *Broker) declare(conn *amqp.Connection) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel to declare topology: %w", err)
	}
	defer ch.Close()
	c := b.cfg
	if err := ch.ExchangeDeclare(c.DeadLetterExchange(), amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", c.DeadLetterExchange(), err)
	}
	if _, err := ch.QueueDeclare(c.DeadLetterQueue(), true, false, false, false, amqp.Table{amqp.QueueTypeArg: c.QueueType}); err != nil {
		return fmt.Errorf("declare queue %s: %w", c.DeadLetterQueue(), err)
	}
	if err := ch.QueueBind(c.DeadLetterQueue(), "", c.DeadLetterExchange(), false, nil); err != nil {
		return fmt.Errorf("bind %s to %s: %w", c.DeadLetterQueue(), c.DeadLetterExchange(), err)
	}
	for i := range c.Shards {
		if _, err := ch.QueueDeclare(c.ShardQueue(i), true, false, false, false, b.shardArgs()); err != nil {
			return fmt.Errorf("declare queue %s: %w", c.ShardQueue(i), err)
		}
	}
	return nil
}

// shardArgs are the ride queues' arguments. RabbitMQ refuses to redeclare a
// queue with other arguments, so changing them means new queue names: see
// Config.ShardQueue and docs/rabbitmq.md ("Upgrading").
func (b *Broker) shardArgs() amqp.Table {
	c := b.cfg
	args := amqp.Table{
		amqp.QueueTypeArg:        c.QueueType,
		"x-dead-letter-exchange": c.DeadLetterExchange(),
	}
	if c.QueueType == QueueTypeQuorum {
		// Quorum queues dead-letter at most once by default: a ride
		// rejected while the dead-letter queue is unavailable is dropped.
		// at-least-once keeps it until the dead-letter queue confirmed it,
		// and RabbitMQ requires reject-publish overflow for that strategy.
		args["x-dead-letter-strategy"] = "at-least-once"
		args[amqp.QueueOverflowArg] = amqp.QueueOverflowRejectPublish
	}
	if c.MaxLength > 0 {
		limit := c.perShardMaxLength()
		if c.QueueType == QueueTypeQuorum {
			// A quorum queue checks its limit after an enqueue and refuses
			// only once it is over (ready > x-max-length), so it takes one
			// ride more than its argument; it accepts again once ready
			// rides fall to 80% of it.
			limit--
		}
		args[amqp.QueueMaxLenArg] = int64(limit)
		args[amqp.QueueOverflowArg] = amqp.QueueOverflowRejectPublish
	}
	if c.QueueType == QueueTypeQuorum && c.DeliveryLimit > 0 {
		// The quorum queue counts deliveries itself (nacks and consumers
		// that died holding the ride) and dead-letters a ride returned more
		// than x-delivery-limit times, i.e. after limit+1 deliveries.
		args["x-delivery-limit"] = int64(c.DeliveryLimit - 1)
	}
	return args
}

// dialDeclared dials a node for purpose and declares the topology on it;
// a node that fails the declaration is marked failed, so the next dial
// tries another.
func (b *Broker) dialDeclared(ctx context.Context, purpose string) (*amqp.Connection, int, error) {
	conn, node, err := b.dial(ctx, purpose)
	if err != nil {
		return nil, 0, err
	}
	if err := b.declare(conn); err != nil {
		conn.Close()
		b.failed(node)
		return nil, 0, fmt.Errorf("%w: rabbitmq at %s: %w", domain.ErrUnavailable, b.masked[node], err)
	}
	return conn, node, nil
}

func (b *Broker) dialPublisher(ctx context.Context) (*pubSession, error) {
	conn, node, err := b.dialDeclared(ctx, "publish")
	if err != nil {
		return nil, err
	}
	s := &pubSession{conn: conn, node: node}
	for range b.cfg.PublishChannels {
		ch, err := conn.Channel()
		if err == nil {
			err = ch.Confirm(false)
		}
		if err != nil {
			conn.Close()
			b.failed(node)
			return nil, fmt.Errorf("%w: rabbitmq at %s: open confirm channel: %w", domain.ErrUnavailable, b.masked[node], err)
		}
		s.chans = append(s.chans, newPubChan(ch))
		// A channel closed by the broker (a channel error) takes the whole
		// session down, so the pool is rebuilt rather than left with a hole.
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		go func() {
			if e, ok := <-closed; ok && e != nil {
				conn.Close()
			}
		}()
	}
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	go func() {
		for bl := range blocked {
			b.blocked.Store(bl.Active)
		}
	}()
	return s, nil
}

func (b *Broker) setPub(s *pubSession, why error) {
	b.mu.Lock()
	b.pub, b.pubErr = s, why
	b.mu.Unlock()
	if s != nil {
		b.blocked.Store(false)
	}
}

// newBackOff is the reconnect schedule: quick first retries (a broker
// restart takes seconds), capped so recovery is noticed soon.
func (b *Broker) newBackOff() backoff.BackOff {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = 100 * time.Millisecond
	e.MaxInterval = b.cfg.ReconnectMaxInterval
	return e
}

// keepPublisher waits for the session to die, then reconnects with backoff
// until ctx ends. While it is down, Publish fails fast.
func (b *Broker) keepPublisher(ctx context.Context, s *pubSession) {
	for {
		closed := s.conn.NotifyClose(make(chan *amqp.Error, 1))
		var why error = errors.New("connection closed")
		select {
		case e, ok := <-closed:
			if ok && e != nil {
				why = e
			}
		case <-ctx.Done():
			b.setPub(nil, errors.New("broker connection closed by this process"))
			s.conn.Close()
			return
		}
		b.setPub(nil, why)
		s.conn.Close()
		b.failed(s.node) // reconnect starting with the next node
		next, err := backoff.Retry(ctx, func() (*pubSession, error) {
			s, err := b.dialPublisher(ctx)
			if err != nil {
				b.setPub(nil, err)
			}
			return s, err
		}, backoff.WithBackOff(b.newBackOff()), backoff.WithMaxElapsedTime(0))
		if err != nil {
			return // ctx ended
		}
		s = next
		b.setPub(s, nil)
	}
}

// session is the live publishing session, or an error saying the broker is
// unreachable: callers fail fast instead of waiting for a reconnect.
func (b *Broker) session() (*pubSession, error) {
	b.mu.RLock()
	s, why := b.pub, b.pubErr
	b.mu.RUnlock()
	if s == nil {
		return nil, fmt.Errorf("%w: rabbitmq broker at %s is unreachable (reconnecting): %v", domain.ErrUnavailable, b.url, why)
	}
	return s, nil
}

// withChannel runs fn on a short-lived channel of the publishing connection,
// so a channel error in an admin call (a missing queue) cannot close the
// publishing pool.
func (b *Broker) withChannel(fn func(*amqp.Channel) error) error {
	s, err := b.session()
	if err != nil {
		return err
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("%w: rabbitmq at %s: open channel: %w", domain.ErrUnavailable, b.masked[s.node], err)
	}
	defer ch.Close()
	return fn(ch)
}

// Depth is the messages ready over all shards plus those this process
// holds unsettled, and the rides in them. The broker counts messages only:
// the rides of ready messages are estimated from the mean rides per message
// this process has lately published or consumed (one per message when it
// has seen none); the rides of held messages are exact. Messages held by
// other consumer processes are not visible here (the broker's declare-ok
// counts ready messages only).
func (b *Broker) Depth(ctx context.Context) (ports.QueueDepth, error) {
	var ready, dead int64
	err := b.withChannel(func(ch *amqp.Channel) error {
		for i := range b.cfg.Shards {
			if err := ctx.Err(); err != nil {
				return err
			}
			q, err := ch.QueueDeclarePassive(b.cfg.ShardQueue(i), true, false, false, false, nil)
			if err != nil {
				return fmt.Errorf("inspect queue %s: %w", b.cfg.ShardQueue(i), err)
			}
			ready += int64(q.Messages)
		}
		q, err := ch.QueueDeclarePassive(b.cfg.DeadLetterQueue(), true, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("inspect queue %s: %w", b.cfg.DeadLetterQueue(), err)
		}
		dead = int64(q.Messages)
		return nil
	})
	if err != nil {
		return ports.QueueDepth{}, fmt.Errorf("queue depth: %w", err)
	}
	d := ports.QueueDepth{Messages: ready, Rides: int64(math.Round(float64(ready) * b.ridesPerMessage())), DeadLetters: dead}
	if c := b.consumer(); c != nil {
		msgs, rides := c.heldCount()
		d.Messages += msgs
		d.Rides += rides
	}
	return d, nil
}

// meanWeight is the weight of the newest message in the running mean of
// rides per message: about the last hundred messages count.
const meanWeight = 0.01

// observeMessage feeds the running mean of rides per message with one
// message published or consumed.
func (b *Broker) observeMessage(rides int) {
	b.meanMu.Lock()
	if b.meanRides == 0 {
		b.meanRides = float64(rides)
	} else {
		b.meanRides += meanWeight * (float64(rides) - b.meanRides)
	}
	b.meanMu.Unlock()
}

func (b *Broker) ridesPerMessage() float64 {
	b.meanMu.Lock()
	defer b.meanMu.Unlock()
	return max(b.meanRides, 1)
}

// Disconnect closes the broker connections and stops reconnecting. Call it
// after Close has drained the deliveries (acks need the connection).
func (b *Broker) Disconnect() error {
	if c := b.consumer(); c != nil {
		c.stopNow()
	}
	if b.stop != nil {
		b.stop()
	}
	b.wg.Wait()
	return nil
}

// DeleteTopology deletes this deployment's queues and dead-letter exchange,
// for tests and teardown. Rides in them are lost.
func (b *Broker) DeleteTopology(ctx context.Context) error {
	return b.withChannel(func(ch *amqp.Channel) error {
		for i := range b.cfg.Shards {
			if _, err := ch.QueueDelete(b.cfg.ShardQueue(i), false, false, false); err != nil {
				return fmt.Errorf("delete queue %s: %w", b.cfg.ShardQueue(i), err)
			}
		}
		if _, err := ch.QueueDelete(b.cfg.DeadLetterQueue(), false, false, false); err != nil {
			return fmt.Errorf("delete queue %s: %w", b.cfg.DeadLetterQueue(), err)
		}
		if err := ch.ExchangeDelete(b.cfg.DeadLetterExchange(), false, false); err != nil {
			return fmt.Errorf("delete exchange %s: %w", b.cfg.DeadLetterExchange(), err)
		}
		return nil
	})
}
