package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeSub hands out what the test feeds it and records acks, nacks and
// rejections by receipt.
type fakeSub struct {
	ch       chan ports.Delivery
	mu       sync.Mutex
	acked    []uint64
	nacks    [][]uint64
	rejected map[uint64][]domain.LiftRide // receipt -> the rides named refused
}

func newFakeSub() *fakeSub { return &fakeSub{ch: make(chan ports.Delivery, 1000)} }

func (f *fakeSub) Deliveries(context.Context) (<-chan ports.Delivery, error) { return f.ch, nil }
func (f *fakeSub) Close() error                                              { return nil }
func (f *fakeSub) Ack(_ context.Context, b []ports.Delivery) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range b {
		f.acked = append(f.acked, d.Receipt.(uint64))
	}
	return nil
}
func (f *fakeSub) Nack(_ context.Context, b []ports.Delivery) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var tags []uint64
	for _, d := range b {
		tags = append(tags, d.Receipt.(uint64))
	}
	f.nacks = append(f.nacks, tags)
	return nil
}
func (f *fakeSub) Reject(_ context.Context, d ports.Delivery, refused []domain.LiftRide) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rejected == nil {
		f.rejected = map[uint64][]domain.LiftRide{}
	}
	f.rejected[d.Receipt.(uint64)] = slices.Clone(refused)
	return nil
}
func (f *fakeSub) state() (acked []uint64, nacks [][]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.acked), slices.Clone(f.nacks)
}

// fakeStore records batches; failures makes the next N calls fail.
type fakeStore struct {
	ports.RideStore
	mu       sync.Mutex
	batches  [][]domain.LiftRide
	failures int
	failWith error           // what a failure returns; nil: domain.ErrUnavailable
	invalid  domain.SkierID  // a skier id the store refuses as invalid
	acked    func() []uint64 // what had been acked when a batch was written
	ackedAt  [][]uint64
}

func (s *fakeStore) AddRides(_ context.Context, rides []domain.LiftRide) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rides {
		if r.SkierID() == s.invalid {
			return domain.Invalid("skier-day of skier %d is full", r.SkierID())
		}
	}
	if s.failures != 0 {
		s.failures--
		if s.failWith != nil {
			return s.failWith
		}
		return domain.Unavailable("store down")
	}
	s.batches = append(s.batches, slices.Clone(rides))
	if s.acked != nil {
		s.ackedAt = append(s.ackedAt, s.acked())
	}
	return nil
}

func (s *fakeStore) written() [][]domain.LiftRide {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// deliver feeds n one-ride messages, receipts 1..n, skier i in message i.
func deliver(sub *fakeSub, n int) {
	for i := 1; i <= n; i++ {
		sub.ch <- ports.Delivery{Rides: []domain.LiftRide{rideOf(i)}, Receipt: uint64(i)}
	}
}

func rideOf(skier int) domain.LiftRide {
	return domain.MustLiftRide(1, "2024", 1, domain.SkierID(skier), 0, 1)
}

// deliverMessages feeds one message per size, receipts 1.., with the skiers
// numbered on across messages (message 1 of size 3: skiers 1..3).
func deliverMessages(sub *fakeSub, sizes ...int) {
	skier := 0
	for i, n := range sizes {
		rides := make([]domain.LiftRide, n)
		for j := range rides {
			skier++
			rides[j] = rideOf(skier)
		}
		sub.ch <- ports.Delivery{Rides: rides, Receipt: uint64(i + 1)}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func runPersister(t *testing.T, p *Persister, sub *fakeSub) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	t.Cleanup(func() {
		close(sub.ch)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestPersisterWritesFullBatchesThenAcks(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{}
	store.acked = func() []uint64 { a, _ := sub.state(); return a }
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 10, Linger: time.Hour, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliver(sub, 30)
	waitFor(t, "30 acks", func() bool { a, _ := sub.state(); return len(a) == 30 })
	batches := store.written()
	if len(batches) != 3 {
		t.Fatalf("wrote %d batches; want 3 of 10", len(batches))
	}
	for i, b := range batches {
		if len(b) != 10 {
			t.Errorf("batch %d has %d rides; want 10", i, len(b))
		}
		// When batch i was written, only the earlier batches were acked.
		if got := len(store.ackedAt[i]); got != 10*i {
			t.Errorf("when batch %d was written %d rides were acked; want %d (ack only after the write)", i, got, 10*i)
		}
	}
}

func TestPersisterFlushesPartialBatchAfterLinger(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 100, Linger: 10 * time.Millisecond, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliver(sub, 3)
	waitFor(t, "the partial batch", func() bool { return len(store.written()) == 1 })
	if got := len(store.written()[0]); got != 3 {
		t.Errorf("partial batch has %d rides; want 3", got)
	}
}

func TestPersisterRetriesTransientStoreFailure(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{failures: 2}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 5, Linger: time.Hour, RetryFor: 10 * time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliver(sub, 5)
	waitFor(t, "5 acks", func() bool { a, _ := sub.state(); return len(a) == 5 })
	if _, nacks := sub.state(); len(nacks) != 0 {
		t.Errorf("nacked %v; a batch that succeeds on retry must not be handed back", nacks)
	}
	if got := len(store.written()); got != 1 {
		t.Errorf("batches written = %d; want 1", got)
	}
}

// countingMetrics records the persister's failure counts.
type countingMetrics struct {
	ports.NopMetrics
	mu                     sync.Mutex
	failed, rejected, good int
}

func (m *countingMetrics) PersistFailed(n int) { m.mu.Lock(); m.failed += n; m.mu.Unlock() }
func (m *countingMetrics) PersistRejected(n int) {
	m.mu.Lock()
	m.rejected += n
	m.mu.Unlock()
}
func (m *countingMetrics) ObserveBatch(n int, _ time.Duration) { m.mu.Lock(); m.good++; m.mu.Unlock() }
func (m *countingMetrics) counts() (failed, rejected, batches int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed, m.rejected, m.good
}

// TestPersisterNacksBatchStoreKeepsFailing: an error that is neither
// "unavailable" nor "invalid" is retried for RetryFor, then the batch goes
// back to the queue, counted as failed.
func TestPersisterNacksBatchStoreKeepsFailing(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{failures: -1, failWith: errors.New("unexpected driver error")} // fails forever
	m := &countingMetrics{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 4, Linger: time.Hour, RetryFor: 200 * time.Millisecond}, nil, m, discard), sub)
	deliver(sub, 4)
	waitFor(t, "a nack", func() bool { _, n := sub.state(); return len(n) == 1 })
	if failed, _, _ := m.counts(); failed != 4 {
		t.Errorf("PersistFailed counted %d rides; want the batch's 4", failed)
	}
	acked, nacks := sub.state()
	if len(acked) != 0 {
		t.Errorf("acked %v although nothing was stored", acked)
	}
	if !slices.Equal(nacks[0], []uint64{1, 2, 3, 4}) {
		t.Errorf("nacked %v; want the whole batch [1 2 3 4]", nacks[0])
	}
}

// TestPersisterHoldsBatchWhileStoreIsUnavailable: a store that answers
// "unavailable" for longer than RetryFor does not make the persister hand
// the batch back (which would use up a broker's delivery limit and
// dead-letter good rides): it holds the batch until the store is back.
func TestPersisterHoldsBatchWhileStoreIsUnavailable(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{failures: 4}
	m := &countingMetrics{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 4, Linger: time.Hour, RetryFor: time.Nanosecond}, nil, m, discard), sub)
	deliver(sub, 4)
	waitFor(t, "4 acks once the store is back", func() bool { a, _ := sub.state(); return len(a) == 4 })
	if _, nacks := sub.state(); len(nacks) != 0 {
		t.Errorf("nacked %v while the store was unavailable; want the batch held", nacks)
	}
	if failed, _, batches := m.counts(); failed != 0 || batches != 1 {
		t.Errorf("metrics: %d failed, %d batches; want 0 failed, 1 batch", failed, batches)
	}
}

// TestPersisterHandsBackHeldBatchWhenStopped: a hard stop while the store
// is unavailable hands the held batch back to the queue.
func TestPersisterHandsBackHeldBatchWhenStopped(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{failures: -1}
	p := NewPersister(sub, store, PersisterConfig{BatchSize: 2, Linger: time.Hour, RetryFor: time.Nanosecond}, nil, ports.NopMetrics{}, discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deliver(sub, 2)
	waitFor(t, "the batch to be taken", func() bool { return len(sub.ch) == 0 })
	cancel()
	waitFor(t, "the held batch nacked", func() bool { _, n := sub.state(); return len(n) == 1 })
	close(sub.ch)
	<-done
}

func TestPersisterDrainFlushesWithoutWaitingForLinger(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{}
	p := NewPersister(sub, store, PersisterConfig{BatchSize: 100, Linger: time.Hour, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard)
	runPersister(t, p, sub)
	deliver(sub, 7)
	waitFor(t, "the rides to be taken", func() bool { return len(sub.ch) == 0 })
	p.Drain()
	waitFor(t, "7 acks after Drain", func() bool { a, _ := sub.state(); return len(a) == 7 })
}

func TestPersisterRejectsOnlyTheRideTheStoreRefuses(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{invalid: 3}
	m := &countingMetrics{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 5, Linger: time.Hour, RetryFor: 10 * time.Second}, nil, m, discard), sub)
	deliver(sub, 5)
	waitFor(t, "four acks", func() bool { a, _ := sub.state(); return len(a) == 4 })
	acked, nacks := sub.state()
	slices.Sort(acked)
	sub.mu.Lock()
	refused, rejected := sub.rejected[3], len(sub.rejected)
	sub.mu.Unlock()
	if !slices.Equal(acked, []uint64{1, 2, 4, 5}) || rejected != 1 || len(refused) != 1 || refused[0] != rideOf(3) || len(nacks) != 0 {
		t.Errorf("acked %v, rejected %d deliveries (message 3 naming %v), nacked %v; want acked [1 2 4 5], message 3 rejected naming skier 3's ride, nothing nacked", acked, rejected, refused, nacks)
	}
	if _, rejected, _ := m.counts(); rejected != 1 {
		t.Errorf("PersistRejected counted %d; want 1", rejected)
	}
}

// TestPersisterWritesTheRidesOfManyDeliveriesInOneStoreCall: the queue
// hands out whole messages; the persister writes the rides of every
// delivery it holds in one store call, in order, then acks each delivery.
func TestPersisterWritesTheRidesOfManyDeliveriesInOneStoreCall(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 20, Linger: time.Hour, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliverMessages(sub, 5, 5, 4, 6)
	waitFor(t, "4 acks", func() bool { a, _ := sub.state(); return len(a) == 4 })
	batches := store.written()
	if len(batches) != 1 || len(batches[0]) != 20 {
		t.Fatalf("store calls: %d, of %v rides; want one call of 20", len(batches), lens(batches))
	}
	for i, r := range batches[0] {
		if r != rideOf(i+1) {
			t.Fatalf("ride %d written is %s; want %s (the messages' rides in order)", i, r.Key(), rideOf(i+1).Key())
		}
	}
}

func lens(bs [][]domain.LiftRide) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = len(b)
	}
	return out
}

// TestPersisterSplitsOnlyTheMessageHoldingARefusedRide: when the store
// refuses a batch, every other message is stored whole and acked, and the
// message holding the refused ride is split: its good rides are stored and
// it is rejected naming only the refused ride.
func TestPersisterSplitsOnlyTheMessageHoldingARefusedRide(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{invalid: 5}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 9, Linger: time.Hour, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliverMessages(sub, 3, 3, 3) // skier 5 is the middle ride of message 2
	waitFor(t, "messages 1 and 3 acked", func() bool { a, _ := sub.state(); return len(a) == 2 })
	acked, nacks := sub.state()
	slices.Sort(acked)
	sub.mu.Lock()
	refused := sub.rejected[2]
	sub.mu.Unlock()
	if !slices.Equal(acked, []uint64{1, 3}) || len(nacks) != 0 || !slices.Equal(refused, []domain.LiftRide{rideOf(5)}) {
		t.Fatalf("acked %v, nacked %v, message 2 rejected naming %v; want [1 3] acked, none nacked, message 2 naming skier 5's ride", acked, nacks, refused)
	}
	stored := map[domain.LiftRide]bool{}
	for _, b := range store.written() {
		for _, r := range b {
			stored[r] = true
		}
	}
	for skier := 1; skier <= 9; skier++ {
		if want := skier != 5; stored[rideOf(skier)] != want {
			t.Errorf("skier %d's ride stored = %v; want %v", skier, stored[rideOf(skier)], want)
		}
	}
}

// TestPersisterWithoutLingerWritesWhatIsAtHand: with Linger 0 the
// deliveries at hand are written at once (their publishers may be waiting
// for the ack), without waiting for a full batch.
func TestPersisterWithoutLingerWritesWhatIsAtHand(t *testing.T) {
	sub, store := newFakeSub(), &fakeStore{}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 100, RetryFor: time.Second}, nil, ports.NopMetrics{}, discard), sub)
	deliver(sub, 3)
	waitFor(t, "3 acks without a full batch", func() bool { a, _ := sub.state(); return len(a) == 3 })
}

// blockingStore holds every write until released, counting the writes in
// progress at once.
type blockingStore struct {
	ports.RideStore
	release chan struct{}
	mu      sync.Mutex
	now     int
	most    int
}

func (s *blockingStore) AddRides(context.Context, []domain.LiftRide) error {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	return nil
}

func (s *blockingStore) inProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// TestPersisterWritesUpToWritersBatchesAtOnce: with Writers 3, three
// batches are written concurrently and a fourth waits for a free writer.
func TestPersisterWritesUpToWritersBatchesAtOnce(t *testing.T) {
	sub, store := newFakeSub(), &blockingStore{release: make(chan struct{})}
	runPersister(t, NewPersister(sub, store, PersisterConfig{BatchSize: 2, Linger: time.Hour, RetryFor: time.Second, Writers: 3}, nil, ports.NopMetrics{}, discard), sub)
	deliver(sub, 8)
	waitFor(t, "three writes in progress", func() bool { return store.inProgress() == 3 })
	close(store.release)
	waitFor(t, "8 acks", func() bool { a, _ := sub.state(); return len(a) == 8 })
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.most != 3 {
		t.Errorf("at most %d writes at once; want 3", store.most)
	}
}
