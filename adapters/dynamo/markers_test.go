package dynamo

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/domain"
)

// recordingAPI stores every BatchWriteItem put and counts them by
// SkierID; before storing the first one it calls onFirst.
type recordingAPI struct {
	API
	mu      sync.Mutex
	puts    map[int64]int
	onFirst func()
}

func (f *recordingAPI) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	first := f.onFirst
	f.onFirst = nil
	f.mu.Unlock()
	if first != nil {
		first()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			id, _ := getNum(r.PutRequest.Item, attrSkierID)
			f.puts[id]++
		}
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// A claim released after a failed write is handed to the batch waiting on
// it, which then writes the marker; a written marker is claimed by no one.
func TestMarkerClaimReleasedOnFailureGoesToTheWaiter(t *testing.T) {
	c := newMarkerClaims(10)
	m := marker{resort: 1, season: domain.MustSeason("2025"), day: domain.MustDay(3), skier: 7}
	mine, _ := c.claim([]marker{m})
	if len(mine) != 1 {
		t.Fatalf("first claim of a new marker = %v; want it", mine)
	}
	again, others := c.claim([]marker{m})
	if len(again) != 0 || others[m] == nil {
		t.Fatalf("second claim while the first is in flight = %v, %v; want to wait on the first", again, others)
	}
	c.settle(mine, false)
	select {
	case <-others[m].done:
	default:
		t.Fatal("the waiter's claim is not done after the write failed")
	}
	if others[m].ok {
		t.Error("a failed write is reported ok to the waiter")
	}
	takeover, _ := c.claim([]marker{m})
	if len(takeover) != 1 {
		t.Fatalf("claim after the failed write = %v; want it", takeover)
	}
	c.settle(takeover, true)
	if mine, others := c.claim([]marker{m}); len(mine) != 0 || len(others) != 0 {
		t.Errorf("claim of a written marker = %v, %v; want nothing to write or wait for", mine, others)
	}
}

// writeMarkers waits for a marker another batch is writing and, when that
// write fails, writes it itself. The other batch's write fails only once
// writeMarkers has sent its own first marker, so it is certainly waiting.
func TestWriteMarkersTakesOverAFailedClaim(t *testing.T) {
	free := marker{resort: 1, season: domain.MustSeason("2025"), day: domain.MustDay(3), skier: 1}
	held := marker{resort: 1, season: domain.MustSeason("2025"), day: domain.MustDay(3), skier: 2}
	api := &recordingAPI{puts: map[int64]int{}}
	b := newBase(api, Config{Model: ModelSharded, WriteConcurrency: 1}, "skierTable")
	s := newSharded(b, b.on("markers"))
	other, _ := s.claims.claim([]marker{held})
	api.onFirst = func() { s.claims.settle(other, false) }

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.writeMarkers(ctx, []marker{free, held}); err != nil {
		t.Fatalf("writeMarkers: %v", err)
	}
	if api.puts[1] != 1 || api.puts[2] != 1 {
		t.Errorf("marker puts by skier = %v; want each of 1 and 2 once", api.puts)
	}
}
