package app

import (
	"context"
	"sync"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// PublishConfig tunes the group commit between the POSTs and the queue.
// Composition takes it from the queue's registry entry, which gives its
// own bounds (a broker's confirm-mode channels for InFlight, what one of
// its messages holds for MaxRides) and the linger configured. The zero
// value publishes every ride at once, alone.
type PublishConfig struct {
	// InFlight is how many messages may be being published at once; rides
	// that arrive while that many are in flight wait and go together in
	// the next message. 0: no bound, every ride goes at once, alone.
	InFlight int
	// MaxRides bounds the rides of one message (default 256).
	MaxRides int
	// Linger is how long a message waits for more rides before it may go
	// (0: it goes as soon as a publish slot is free).
	Linger time.Duration
	// LingerGap ends a linger early once no ride has joined the waiting
	// ones for this long and they are more than one and at least half as
	// many as the last message carried: a burst of concurrent POSTs like
	// the last has come.
	// Under a steady stream rides keep joining, and a pause in it leaves
	// fewer waiting, so the whole Linger is used; a burst goes as soon as
	// it has arrived. 0: every message lingers the whole Linger.
	LingerGap time.Duration
}

// groupCommit publishes rides POSTed at the same time as one message, so
// they share one broker confirm. It is the API side's one batcher,
// whatever the queue (the persister is the consumer side's): it lives in
// the use case because it decides per request, leaving out a ride whose
// request ended and telling each request its message's outcome.
//
// It is leader/follower, like a database's group commit: under light load
// a ride finds a free publish slot and its own request goroutine publishes
// it at once, alone, with no hand-off. Rides that arrive while InFlight
// messages are in flight queue up, and the next free slot takes them all
// (up to MaxRides) as one message, published on a goroutine of its own
// that tells each waiting request the outcome. With a Linger every ride
// waits: the first one starts the linger, and the rides go together when
// it ends (or LingerGap ends it early) or MaxRides are waiting.
type groupCommit struct {
	pub ports.Publisher
	cfg PublishConfig

	mu        sync.Mutex
	inFlight  int
	waiting   []*waitingRide
	lingering bool      // the waiting rides are lingering (a timer runs)
	lingerGen int       // tells the current linger timer from stale ones
	lingerEnd time.Time // when the current linger ends at the latest
	lastJoin  time.Time // when the last ride joined the lingering ones
	lastSize  int       // rides in the last message sent
}

type waitingRide struct {
	ride domain.LiftRide
	ctx  context.Context
	done chan error // buffered: the publisher never blocks on it
}

func newGroupCommit(pub ports.Publisher, cfg PublishConfig) *groupCommit {
	if cfg.MaxRides <= 0 {
		cfg.MaxRides = 256
	}
	return &groupCommit{pub: pub, cfg: cfg}
}

// publish returns once the queue holds the ride (nil) or has refused the
// message that carried it.
func (g *groupCommit) publish(ctx context.Context, ride domain.LiftRide) error {
	g.mu.Lock()
	if len(g.waiting) == 0 && g.cfg.Linger == 0 && g.slotFree() {
		g.inFlight++
		g.mu.Unlock()
		err := g.pub.Publish(ctx, []domain.LiftRide{ride})
		g.release()
		return err
	}
	w := &waitingRide{ride: ride, ctx: ctx, done: make(chan error, 1)}
	g.waiting = append(g.waiting, w)
	if g.cfg.Linger > 0 {
		g.lastJoin = time.Now()
		if len(g.waiting) == 1 {
			g.lingering = true
			g.lingerGen++
			g.lingerEnd = g.lastJoin.Add(g.cfg.Linger)
			g.checkLingerAt(g.nextLingerCheck(g.lastJoin), g.lingerGen)
		}
	}
	g.startNext()
	g.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return domain.Unavailable("ride %s not confirmed by the queue before the request ended (it may or may not be queued; sending it again is safe): %v", ride.Key(), ctx.Err())
	}
}

func (g *groupCommit) slotFree() bool { return g.cfg.InFlight == 0 || g.inFlight < g.cfg.InFlight }

// startNext sends the waiting rides as one message if a slot is free and
// they need not linger any more. Called with mu held.
func (g *groupCommit) startNext() {
	if len(g.waiting) == 0 || !g.slotFree() || (g.lingering && len(g.waiting) < g.cfg.MaxRides) {
		return
	}
	n := min(len(g.waiting), g.cfg.MaxRides)
	g.lastSize = n
	batch := make([]*waitingRide, n)
	copy(batch, g.waiting)
	rest := copy(g.waiting, g.waiting[n:])
	clear(g.waiting[rest:])
	g.waiting = g.waiting[:rest]
	if rest == 0 {
		g.lingering = false
	}
	g.inFlight++
	go g.send(batch)
}

// nextLingerCheck is when the current linger may end next: at its end, or
// earlier once no ride has joined for LingerGap. Called with mu held.
func (g *groupCommit) nextLingerCheck(now time.Time) time.Time {
	if g.cfg.LingerGap > 0 {
		quiet := g.lastJoin.Add(g.cfg.LingerGap)
		if !quiet.After(now) {
			quiet = now.Add(g.cfg.LingerGap)
		}
		if quiet.Before(g.lingerEnd) {
			return quiet
		}
	}
	return g.lingerEnd
}

// checkLingerAt runs lingerCheck for linger gen at t. One timer runs per
// linger: a ride joining does not touch it, it is re-armed when it fires
// too early. Called with mu held.
func (g *groupCommit) checkLingerAt(t time.Time, gen int) {
	time.AfterFunc(time.Until(t), func() { g.lingerCheck(gen) })
}

// lingerDue says whether the current linger ends now: its time is up, or
// no ride has joined for LingerGap and the waiting rides are more than one
// and at least half as many as the last message carried (a burst like the
// last one has come; fewer would be a pause in a stream, and a lone ride
// is no burst: in a slow stream each would go alone, costing a message,
// and a billed request where the queue bills by request). Called with mu
// held.
func (g *groupCommit) lingerDue(now time.Time) bool {
	if !now.Before(g.lingerEnd) {
		return true
	}
	n := len(g.waiting)
	return g.cfg.LingerGap > 0 && !now.Before(g.lastJoin.Add(g.cfg.LingerGap)) && n > 1 && 2*n >= g.lastSize
}

// lingerCheck ends linger gen if it is due, or looks again when it may be.
func (g *groupCommit) lingerCheck(gen int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gen != g.lingerGen || !g.lingering {
		return
	}
	if now := time.Now(); !g.lingerDue(now) {
		g.checkLingerAt(g.nextLingerCheck(now), gen)
		return
	}
	g.lingering = false
	g.startNext()
}

// release frees a publish slot and hands it to the rides waiting for one.
func (g *groupCommit) release() {
	g.mu.Lock()
	g.inFlight--
	g.startNext()
	g.mu.Unlock()
}

// send publishes one message of waiting rides and tells each its outcome.
// Rides whose request has already ended are left out: they were answered
// with an error, and publishing them is not wrong but is wasted work.
func (g *groupCommit) send(batch []*waitingRide) {
	defer g.release()
	rides := make([]domain.LiftRide, 0, len(batch))
	live := batch[:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.done <- err
			continue
		}
		rides = append(rides, w.ride)
		live = append(live, w)
	}
	if len(rides) == 0 {
		return
	}
	// The message outlives any one request: it is bounded by the queue's
	// own publish timeout, not by the first caller's deadline.
	err := g.pub.Publish(context.Background(), rides)
	for _, w := range live {
		w.done <- err
	}
}
