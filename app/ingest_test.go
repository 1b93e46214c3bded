package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// settableDepth is a QueueStats whose depth in rides the test sets.
type settableDepth struct{ d atomic.Int64 }

func (s *settableDepth) Depth(context.Context) (ports.QueueDepth, error) {
	return ports.QueueDepth{Rides: s.d.Load(), Messages: s.d.Load()}, nil
}

// recordingPublisher records every message; while hold is set, Publish
// blocks until it is closed. fail, if set, is what Publish returns.
type recordingPublisher struct {
	mu       sync.Mutex
	messages [][]domain.LiftRide
	hold     chan struct{}
	fail     error
	now      atomic.Int64 // publishes in progress
	most     atomic.Int64
}

func (p *recordingPublisher) Publish(_ context.Context, rides []domain.LiftRide) error {
	n := p.now.Add(1)
	defer p.now.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	p.mu.Lock()
	p.messages = append(p.messages, slices.Clone(rides))
	hold, fail := p.hold, p.fail
	p.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return fail
}

func (p *recordingPublisher) sent() [][]domain.LiftRide {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.messages)
}

// rejections counts Metrics.RideRejected by reason.
type rejections struct {
	ports.NopMetrics
	tally
}

func (r *rejections) RideRejected(reason string) { r.add(reason) }

// tally counts events by name, safe for concurrent use.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *tally) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *tally) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// demoCatalog is a catalogue holding the demo resorts (season 2024 at
// resort 1 among them).
func demoCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := NewCatalog(context.Background(), memory.NewResortStore(), CatalogConfig{SeedDemo: true}, discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startIngest(t *testing.T, pub ports.Publisher, q ports.QueueStats, adm AdmissionConfig, pc PublishConfig, m ports.Metrics) *Ingest {
	t.Helper()
	in, cleanup := NewIngest(context.Background(), demoCatalog(t), pub, q, adm, pc, m, discard)
	t.Cleanup(cleanup)
	return in
}

var aRide = domain.MustLiftRide(1, "2024", 1, 1, 1, 1)

func TestIngestOverTheRateIsOverloaded(t *testing.T) {
	pub, m := &recordingPublisher{}, &rejections{}
	// One ride per minute, burst 3: the fourth ride at once is over the rate.
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{Rate: 1.0 / 60, Burst: 3}, PublishConfig{}, m)
	for i := range 3 {
		if err := in.AddRide(context.Background(), aRide); err != nil {
			t.Fatalf("ride %d within the burst: %v", i+1, err)
		}
	}
	err := in.AddRide(context.Background(), aRide)
	if !errors.Is(err, domain.ErrOverloaded) {
		t.Fatalf("ride over the rate = %v; want ErrOverloaded", err)
	}
	if n := len(pub.sent()); n != 3 || m.of(rejectRate) != 1 {
		t.Errorf("published %d, rate rejections %d; want 3 and 1", n, m.of(rejectRate))
	}
}

// TestIngestRideWhoseTokenComesWithinMaxWaitWaitsForIt: rides a little
// over the rate are spread out, not refused: a 429's Retry-After is whole
// seconds, so a refusal would idle a closed-loop client for a second.
func TestIngestRideWhoseTokenComesWithinMaxWaitWaitsForIt(t *testing.T) {
	pub, m := &recordingPublisher{}, &rejections{}
	// 100 rides a second, burst 1: the 20th of 20 rides at once has its
	// token ~190 ms later, well within the wait allowed.
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{Rate: 100, Burst: 1, MaxWait: 5 * time.Second}, PublishConfig{}, m)
	const rides = 20
	errs := make(chan error, rides)
	for range rides {
		go func() { errs <- in.AddRide(context.Background(), aRide) }()
	}
	for range rides {
		if err := <-errs; err != nil {
			t.Errorf("ride whose token is due within --ingest-max-wait: %v; want accepted", err)
		}
	}
	if n, refused := len(pub.sent()), m.of(rejectRate); n == 0 || refused != 0 {
		t.Errorf("published %d messages, %d rate rejections; want some and 0", n, refused)
	}
}

// TestIngestRideWhoseTokenIsFurtherThanMaxWaitIsRefusedWithoutDebt: a
// ride that would wait longer than MaxWait is refused at once, and the
// refusal takes nothing from the bucket (the next ride is not pushed back).
func TestIngestRideWhoseTokenIsFurtherThanMaxWaitIsRefusedWithoutDebt(t *testing.T) {
	m := &rejections{}
	in := startIngest(t, &recordingPublisher{}, &settableDepth{}, AdmissionConfig{Rate: 1.0 / 60, Burst: 1, MaxWait: time.Second}, PublishConfig{}, m)
	clock := time.Unix(1_700_000_000, 0)
	in.now = func() time.Time { return clock }
	if err := in.AddRide(context.Background(), aRide); err != nil {
		t.Fatalf("first ride: %v", err)
	}
	if err := in.AddRide(context.Background(), aRide); !errors.Is(err, domain.ErrOverloaded) {
		t.Fatalf("ride whose token is a minute off = %v; want ErrOverloaded", err)
	}
	if tokens := in.limiter.TokensAt(clock); tokens < -1e-9 {
		t.Errorf("bucket after the refusal holds %g tokens; want 0 (the refused ride took none)", tokens)
	}
	if m.of(rejectRate) != 1 {
		t.Errorf("rate rejections %d; want 1", m.of(rejectRate))
	}
}

// TestIngestRideWaitingForItsTokenGivesItBackWhenItsClientLeaves: a ride
// whose request ends while it waits is not published, and its token goes
// back to the bucket for the next ride.
func TestIngestRideWaitingForItsTokenGivesItBackWhenItsClientLeaves(t *testing.T) {
	pub, m := &recordingPublisher{}, &rejections{}
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{Rate: 1, Burst: 1, MaxWait: time.Hour}, PublishConfig{}, m)
	clock := time.Unix(1_700_000_000, 0)
	in.now = func() time.Time { return clock }
	if err := in.AddRide(context.Background(), aRide); err != nil {
		t.Fatalf("first ride: %v", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := in.AddRide(gone, aRide); !errors.Is(err, context.Canceled) {
		t.Fatalf("ride of a client that left while it waited = %v; want context.Canceled", err)
	}
	if tokens := in.limiter.TokensAt(clock); tokens < -1e-9 {
		t.Errorf("bucket holds %g tokens; want 0 (the abandoned ride's token given back)", tokens)
	}
	if n := len(pub.sent()); n != 1 || m.of(rejectCanceled) != 1 {
		t.Errorf("published %d, canceled %d; want 1 and 1", n, m.of(rejectCanceled))
	}
}

func TestIngestWithZeroRateIsUnlimited(t *testing.T) {
	pub := &recordingPublisher{}
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{}, PublishConfig{}, ports.NopMetrics{})
	for range 10_000 {
		if err := in.AddRide(context.Background(), aRide); err != nil {
			t.Fatal(err)
		}
	}
	if in.limiter != nil {
		t.Errorf("a zero rate made a limiter of %g rides/s; want none", float64(in.limiter.Limit()))
	}
}

func TestIngestPastTheHardLimitIsQueueFull(t *testing.T) {
	pub, m, q := &recordingPublisher{}, &rejections{}, &settableDepth{}
	in := startIngest(t, pub, q, AdmissionConfig{HardLimit: 100}, PublishConfig{}, m)
	q.d.Store(100)
	waitFor(t, "a ride refused as a full queue at depth 100", func() bool {
		err := in.AddRide(context.Background(), aRide)
		return errors.Is(err, domain.ErrUnavailable) && errors.Is(err, ports.ErrQueueFull)
	})
	if m.of(rejectQueueFull) == 0 {
		t.Error("no queue_full rejection counted")
	}
	q.d.Store(99)
	waitFor(t, "rides accepted again below the ceiling", func() bool {
		return in.AddRide(context.Background(), aRide) == nil
	})
}

func TestIngestRateFollowsQueueDepth(t *testing.T) {
	q := &settableDepth{}
	in := startIngest(t, &recordingPublisher{}, q, AdmissionConfig{Rate: 1000, SoftLimit: 100, HardLimit: 200}, PublishConfig{}, ports.NopMetrics{})
	for _, c := range []struct {
		depth int64
		rate  float64
	}{
		{50, 1000},  // below soft: full rate
		{100, 1000}, // at soft: still full
		{150, 500},  // half way: half the rate
		{190, 100},  // 90% of the way: a tenth
		{199, 50},   // the floor: 5%
		{0, 1000},   // drained: back to full
	} {
		q.d.Store(c.depth)
		waitFor(t, "rate "+ftoa(c.rate)+" at depth "+ftoa(float64(c.depth)), func() bool {
			return math.Abs(float64(in.limiter.Limit())-c.rate) < 1e-9
		})
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestIngestSamplerStopsOnCleanup(t *testing.T) {
	_, cleanup := NewIngest(context.Background(), nil, &recordingPublisher{}, &settableDepth{}, AdmissionConfig{}, PublishConfig{}, ports.NopMetrics{}, discard)
	done := make(chan struct{})
	go func() { cleanup(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the depth sampler did not stop within 10s of cleanup")
	}
}

func TestIngestUnknownResortOrSeasonIsNotFoundAndNotPublished(t *testing.T) {
	pub, m := &recordingPublisher{}, &rejections{}
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{}, PublishConfig{}, m)
	for _, r := range []domain.LiftRide{
		domain.MustLiftRide(999, "2024", 1, 1, 1, 1), // no such resort
		domain.MustLiftRide(1, "1999", 1, 1, 1, 1),   // no such season
	} {
		if err := in.AddRide(context.Background(), r); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("ride %s = %v; want ErrNotFound", r.Key(), err)
		}
	}
	if n := len(pub.sent()); n != 0 || m.of(rejectNotFound) != 2 {
		t.Errorf("published %d, not_found rejections %d; want 0 and 2", n, m.of(rejectNotFound))
	}
}

// TestIngestCountsEachRefusalOnceByItsReason: every refusal after admission
// is counted once, under the reason its error carries.
func TestIngestCountsEachRefusalOnceByItsReason(t *testing.T) {
	for reason, err := range map[string]error{
		rejectQueueFull:   fmt.Errorf("%w: %w: 5 rides waiting", domain.ErrUnavailable, ports.ErrQueueFull),
		rejectBreakerOpen: fmt.Errorf("%w: %w", domain.ErrUnavailable, ports.ErrPublishPaused),
		rejectUnavailable: domain.Unavailable("broker unreachable"),
		rejectCanceled:    context.Canceled,
		rejectError:       errors.New("something else"),
	} {
		m := &rejections{}
		in := startIngest(t, &recordingPublisher{fail: err}, &settableDepth{}, AdmissionConfig{}, PublishConfig{}, m)
		if got := in.AddRide(context.Background(), aRide); !errors.Is(got, err) {
			t.Errorf("%s: AddRide = %v; want the queue's error", reason, got)
		}
		m.mu.Lock()
		counts := maps.Clone(m.n)
		m.mu.Unlock()
		if len(counts) != 1 || counts[reason] != 1 {
			t.Errorf("%s: counted %v; want exactly one %s", reason, counts, reason)
		}
	}
}

// The group commit.

func ridesFor(n int) []domain.LiftRide {
	rides := make([]domain.LiftRide, n)
	for i := range rides {
		rides[i] = domain.MustLiftRide(1, "2024", 1, domain.SkierID(i+1), 1, 1)
	}
	return rides
}

// TestGroupCommitUnderLightLoadPublishesEachRideAlone: with a slot free a
// ride is published at once, alone, by its own caller.
func TestGroupCommitUnderLightLoadPublishesEachRideAlone(t *testing.T) {
	pub := &recordingPublisher{}
	g := newGroupCommit(pub, PublishConfig{InFlight: 4})
	for _, r := range ridesFor(5) {
		if err := g.publish(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if got := lens(pub.sent()); !slices.Equal(got, []int{1, 1, 1, 1, 1}) {
		t.Errorf("message sizes %v; want five messages of one ride", got)
	}
}

// publishAll publishes every ride from its own goroutine and returns where
// the results go.
func publishAll(g *groupCommit, rides []domain.LiftRide) <-chan error {
	errs := make(chan error, len(rides))
	for _, r := range rides {
		go func() { errs <- g.publish(context.Background(), r) }()
	}
	return errs
}

func waitingRides(g *groupCommit) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}

// publishBehindABusySlot publishes one ride through a group commit of one
// slot and maxRides a message, holds it in flight while ten more arrive,
// then lets the publishes go; it returns the publisher and the eleven
// publishes' results.
func publishBehindABusySlot(t *testing.T, maxRides int) (*recordingPublisher, []error) {
	t.Helper()
	hold := make(chan struct{})
	pub := &recordingPublisher{hold: hold}
	g := newGroupCommit(pub, PublishConfig{InFlight: 1, MaxRides: maxRides})
	rides := ridesFor(11)
	first := publishAll(g, rides[:1])
	waitFor(t, "the first ride in flight", func() bool { return pub.now.Load() == 1 })
	rest := publishAll(g, rides[1:])
	waitFor(t, "ten rides waiting for the slot", func() bool { return waitingRides(g) == 10 })
	close(hold)
	var errs []error
	for range 11 {
		select {
		case err := <-first:
			errs = append(errs, err)
		case err := <-rest:
			errs = append(errs, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a publish did not return within 10s")
		}
	}
	return pub, errs
}

// TestGroupCommitRidesArrivingWhileSlotsAreBusyShareOneMessage: rides that
// arrive while every slot is in flight go together in the next message,
// and each caller hears its message's outcome.
func TestGroupCommitRidesArrivingWhileSlotsAreBusyShareOneMessage(t *testing.T) {
	pub, errs := publishBehindABusySlot(t, 100)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := lens(pub.sent()); !slices.Equal(got, []int{1, 10}) {
		t.Errorf("message sizes %v; want [1 10]: the ten waiting rides in one message", got)
	}
	if pub.most.Load() != 1 {
		t.Errorf("%d publishes at once; want at most InFlight 1", pub.most.Load())
	}
}

// TestGroupCommitBoundsAMessageAtMaxRides: waiting rides are split into
// messages of at most MaxRides.
func TestGroupCommitBoundsAMessageAtMaxRides(t *testing.T) {
	pub, _ := publishBehindABusySlot(t, 4)
	if got := lens(pub.sent()); !slices.Equal(got, []int{1, 4, 4, 2}) {
		t.Errorf("message sizes %v; want [1 4 4 2]", got)
	}
}

// awaitPublishes fails the test unless n publishes from errs succeed within
// 10s; why is added to the timeout's message.
func awaitPublishes(t *testing.T, errs <-chan error, n int, why string) {
	t.Helper()
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a publish did not return within 10s" + why)
		}
	}
}

// TestGroupCommitLingerGathersRides: with a linger, rides that could go at
// once wait for it and go together.
func TestGroupCommitLingerGathersRides(t *testing.T) {
	pub := &recordingPublisher{}
	g := newGroupCommit(pub, PublishConfig{InFlight: 8, MaxRides: 100, Linger: 200 * time.Millisecond})
	awaitPublishes(t, publishAll(g, ridesFor(5)), 5, "")
	if got := lens(pub.sent()); !slices.Equal(got, []int{5}) {
		t.Errorf("message sizes %v; want one message of 5", got)
	}
}

// TestGroupCommitLingerEndsOnceRidesStopJoining: with a gap, a linger of
// an hour ends once the rides POSTed together have joined and no more come;
// the rides that joined within the gap of each other still share a message.
func TestGroupCommitLingerEndsOnceRidesStopJoining(t *testing.T) {
	pub := &recordingPublisher{}
	// Five publishes started together join within microseconds of each
	// other: a second's gap leaves room for a slow, loaded test machine.
	g := newGroupCommit(pub, PublishConfig{InFlight: 8, MaxRides: 100, Linger: time.Hour, LingerGap: time.Second})
	awaitPublishes(t, publishAll(g, ridesFor(5)), 5, ": the linger did not end when rides stopped joining")
	if got := lens(pub.sent()); !slices.Equal(got, []int{5}) {
		t.Errorf("message sizes %v; want one message of 5", got)
	}
}

// TestGroupCommitAPauseInAStreamDoesNotEndTheLinger: a gap ends a linger
// only when the rides waiting are at least half as many as the last message
// carried, and more than one; fewer are a pause in a stream, and a lone
// ride is no burst (a slow stream's rides would each go alone, a message
// and a queue request each): they linger on (to its end).
func TestGroupCommitAPauseInAStreamDoesNotEndTheLinger(t *testing.T) {
	const gap = 10 * time.Millisecond
	g := newGroupCommit(&recordingPublisher{}, PublishConfig{InFlight: 8, MaxRides: 100, Linger: time.Second, LingerGap: gap})
	start := time.Now()
	g.lingerEnd = start.Add(time.Second)
	for _, c := range []struct {
		name     string
		lastSize int
		waiting  int
		quiet    time.Duration // since the last ride joined
		at       time.Duration // since the linger began
		due      bool
	}{
		{"a burst like the last, quiet for the gap", 40, 20, gap, 2 * gap, true},
		{"a burst like the last, rides still joining", 40, 20, gap / 2, 2 * gap, false},
		{"fewer than half the last, quiet for the gap", 40, 19, 5 * gap, 6 * gap, false},
		{"fewer than half the last, linger over", 40, 19, 5 * gap, time.Second, true},
		{"a lone ride after a lone ride, quiet for the gap", 1, 1, 5 * gap, 6 * gap, false},
		{"two rides after a lone ride, quiet for the gap", 1, 2, gap, 2 * gap, true},
		{"a lone ride, linger over", 1, 1, 5 * gap, time.Second, true},
	} {
		now := start.Add(c.at)
		g.lastSize = c.lastSize
		g.waiting = make([]*waitingRide, c.waiting)
		g.lastJoin = now.Add(-c.quiet)
		if got := g.lingerDue(now); got != c.due {
			t.Errorf("%s: linger due = %v; want %v", c.name, got, c.due)
		}
	}
}

// TestGroupCommitLeavesOutRidesWhoseRequestEnded: a waiting ride whose
// request ended is answered with its context's error and not published.
func TestGroupCommitLeavesOutRidesWhoseRequestEnded(t *testing.T) {
	hold := make(chan struct{})
	pub := &recordingPublisher{hold: hold}
	g := newGroupCommit(pub, PublishConfig{InFlight: 1})
	rides := ridesFor(3)
	first := publishAll(g, rides[:1])
	waitFor(t, "the first ride in flight", func() bool { return pub.now.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- g.publish(ctx, rides[1]) }()
	kept := publishAll(g, rides[2:])
	waitFor(t, "two rides waiting", func() bool { return waitingRides(g) == 2 })
	cancel()
	if err := <-gone; !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("ride whose request ended = %v; want ErrUnavailable", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	sent := pub.sent()
	if len(sent) != 2 || !slices.Equal(sent[1], rides[2:]) {
		t.Errorf("messages %v; want the first ride, then only the third", sent)
	}
}

// TestOneClientOverItsRateLeavesTheOthersTheirs: a client that spends its
// own bucket gets 429s (reason client_rate), while another client, and
// rides whose transport names no client, still get in; with time its
// bucket refills.
func TestOneClientOverItsRateLeavesTheOthersTheirs(t *testing.T) {
	pub, m := &recordingPublisher{}, &rejections{}
	in := startIngest(t, pub, &settableDepth{}, AdmissionConfig{ClientRate: 1, ClientBurst: 2}, PublishConfig{}, m)
	clock := time.Unix(1_700_000_000, 0)
	in.now = func() time.Time { return clock }
	greedy, polite := ports.WithClient(context.Background(), "192.0.2.1"), ports.WithClient(context.Background(), "192.0.2.2")
	for i := range 2 {
		if err := in.AddRide(greedy, aRide); err != nil {
			t.Fatalf("greedy ride %d within its burst: %v", i+1, err)
		}
	}
	err := in.AddRide(greedy, aRide)
	var de *domain.Error
	if !errors.Is(err, domain.ErrOverloaded) || !errors.As(err, &de) || de.Msg != "this client may send at most 1 rides per second; retry after the Retry-After header" {
		t.Fatalf("greedy ride over its rate = %v; want ErrOverloaded saying the client's rate", err)
	}
	if err := in.AddRide(polite, aRide); err != nil {
		t.Errorf("another client: %v; want accepted", err)
	}
	if err := in.AddRide(context.Background(), aRide); err != nil {
		t.Errorf("a ride with no client named: %v; want accepted", err)
	}
	if m.of(rejectClientRate) != 1 || m.of(rejectRate) != 0 {
		t.Errorf("rejections client_rate %d, rate %d; want 1 and 0", m.of(rejectClientRate), m.of(rejectRate))
	}
	clock = clock.Add(time.Second)
	if err := in.AddRide(greedy, aRide); err != nil {
		t.Errorf("greedy client a second later: %v; want its refilled token", err)
	}
}

// TestAClientOverItsRateIsToldOneSentence: the refusal's message, which
// the log prints whole, is the overload's sentence and nothing glued to
// it; the marker that counts it as client_rate adds no text.
func TestAClientOverItsRateIsToldOneSentence(t *testing.T) {
	m := &rejections{}
	in := startIngest(t, &recordingPublisher{}, &settableDepth{}, AdmissionConfig{ClientRate: 1, ClientBurst: 1}, PublishConfig{}, m)
	in.now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	client := ports.WithClient(context.Background(), "192.0.2.1")
	if err := in.AddRide(client, aRide); err != nil {
		t.Fatalf("ride within the client's burst: %v", err)
	}
	err := in.AddRide(client, aRide)
	const want = "this client may send at most 1 rides per second; retry after the Retry-After header"
	if err == nil || err.Error() != want {
		t.Fatalf("ride over the client's rate = %v; want the message %q", err, want)
	}
	if m.of(rejectClientRate) != 1 {
		t.Errorf("client_rate rejections %d; want 1", m.of(rejectClientRate))
	}
}

// TestRidesToAnUnknownResortMakeNoClientBucket: the catalogue's check comes
// before the client's bucket is made, so rides from many addresses to a
// resort or season that does not exist cannot fill the LRU of client
// buckets (and push out the buckets of real clients); a ride that passes
// the check makes its client's bucket.
func TestRidesToAnUnknownResortMakeNoClientBucket(t *testing.T) {
	m := &rejections{}
	in := startIngest(t, &recordingPublisher{}, &settableDepth{}, AdmissionConfig{ClientRate: 1}, PublishConfig{}, m)
	for i, r := range []domain.LiftRide{
		domain.MustLiftRide(999, "2024", 1, 1, 1, 1), // no such resort
		domain.MustLiftRide(1, "1999", 1, 1, 1, 1),   // no such season
	} {
		for c := range 50 {
			client := ports.WithClient(context.Background(), fmt.Sprintf("198.51.100.%d", 100*i+c))
			if err := in.AddRide(client, r); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("ride %s = %v; want ErrNotFound", r.Key(), err)
			}
		}
	}
	if n := in.clients.Len(); n != 0 {
		t.Errorf("100 rides to an unknown resort or season left %d client buckets; want 0", n)
	}
	if err := in.AddRide(ports.WithClient(context.Background(), "192.0.2.1"), aRide); err != nil {
		t.Fatal(err)
	}
	if n := in.clients.Len(); n != 1 {
		t.Errorf("a ride that passed the catalogue left %d client buckets; want 1", n)
	}
}

// TestANoisyClientAtTenTimesItsShareLeavesAQuietClientUnder1PercentRefused:
// the server takes 1,000 rides a second, a client's share is 200. Over
// ten seconds of a simulated clock, one client sends 2,000 a second (ten
// times its share, twice the server's rate) and another 100. With the
// per-client limit the quiet client is refused less than 1% of the time;
// without it (the contrast that shows the test can fail) the noisy client
// spends the server's bucket and the quiet one is refused far more often.
func TestANoisyClientAtTenTimesItsShareLeavesAQuietClientUnder1PercentRefused(t *testing.T) {
	quietRefusedShare := func(adm AdmissionConfig) float64 {
		in := startIngest(t, &recordingPublisher{}, &settableDepth{}, adm, PublishConfig{}, ports.NopMetrics{})
		clock := time.Unix(1_700_000_000, 0)
		in.now = func() time.Time { return clock }
		noisy, quiet := ports.WithClient(context.Background(), "192.0.2.1"), ports.WithClient(context.Background(), "192.0.2.2")
		var sent, refused int
		for ms := range 10_000 {
			clock = clock.Add(time.Millisecond)
			_ = in.AddRide(noisy, aRide) // two a millisecond: 2,000 a second
			_ = in.AddRide(noisy, aRide)
			if ms%10 == 0 { // one every ten: 100 a second
				sent++
				if err := in.AddRide(quiet, aRide); errors.Is(err, domain.ErrOverloaded) {
					refused++
				} else if err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("quiet refused %d of %d", refused, sent)
		return float64(refused) / float64(sent)
	}
	if got := quietRefusedShare(AdmissionConfig{Rate: 1000, Burst: 100, ClientRate: 200}); got > 0.01 {
		t.Errorf("with --client-rate the quiet client was refused %.1f%% of the time; want at most 1%%", 100*got)
	}
	if got := quietRefusedShare(AdmissionConfig{Rate: 1000, Burst: 100}); got <= 0.01 {
		t.Errorf("without --client-rate the quiet client was refused %.1f%% of the time; the noisy client should have crowded it out", 100*got)
	}
}
