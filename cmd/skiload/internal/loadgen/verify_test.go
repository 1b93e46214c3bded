package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lossyService is a fake Ski Data API that answers 201 to every POST but
// silently drops the first ride it is given: verify must notice.
type lossyService struct {
	mu      sync.Mutex
	dropped bool
	rides   map[Ride]struct{}
}

func (s *lossyService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rd Ride
	switch {
	case r.URL.Path == "/readyz":
		json.NewEncoder(w).Encode(Readiness{Status: "ok"})
	case r.Method == http.MethodPost:
		var body struct{ Time, LiftID int32 }
		json.NewDecoder(r.Body).Decode(&body)
		fmt.Sscanf(r.URL.Path, "/skiers/%d/seasons/%d/days/%d/skiers/%d", &rd.ResortID, &rd.Season, &rd.Day, &rd.SkierID)
		rd.Time, rd.LiftID = body.Time, body.LiftID
		if s.dropped {
			s.rides[rd] = struct{}{}
		}
		s.dropped = true
		w.WriteHeader(http.StatusCreated)
	case strings.HasPrefix(r.URL.Path, "/resorts/"):
		fmt.Sscanf(r.URL.Path, "/resorts/%d/seasons/%d/day/%d/skiers", &rd.ResortID, &rd.Season, &rd.Day)
		skiers := map[int32]bool{}
		for k := range s.rides {
			if k.ResortID == rd.ResortID && k.Season == rd.Season && k.Day == rd.Day {
				skiers[k.SkierID] = true
			}
		}
		fmt.Fprintf(w, `{"time":"x","numSkiers":%d}`, len(skiers))
	default:
		fmt.Sscanf(r.URL.Path, "/skiers/%d/seasons/%d/days/%d/skiers/%d", &rd.ResortID, &rd.Season, &rd.Day, &rd.SkierID)
		var v int64
		for k := range s.rides {
			if k.ResortID == rd.ResortID && k.Season == rd.Season && k.Day == rd.Day && k.SkierID == rd.SkierID {
				v += k.Vertical()
			}
		}
		if v == 0 {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprint(w, v)
	}
}

func smallConfig(url string) Config {
	c := DefaultConfig()
	c.URL = url
	c.Phases = Phases{Phase1Workers: 2, Phase1Requests: 50, Phase2Workers: 3, Phase2Requests: 50}
	c.Ranges.Skiers = Range{1, 1000}
	c.Verify = true
	c.VerifyDeadline = 10 * time.Second
	c.VerifySample = 1_000_000 // every skier-day: the dropped ride's must be among them
	return c
}

func TestVerifyDetectsALostRide(t *testing.T) {
	srv := httptest.NewServer(&lossyService{rides: map[Ride]struct{}{}})
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	code := Run(context.Background(), smallConfig(srv.URL), &out, &Progress{})
	if code != ExitFailed {
		t.Errorf("exit %d; want %d for a lost ride", code, ExitFailed)
	}
	if !strings.Contains(out.String(), "1 short") || strings.Contains(out.String(), "lost: 0") {
		t.Errorf("report does not show the dropped ride as lost:\n%s", out.String())
	}
}

func TestVerifyWarnsAboutExtraRidesWithoutCallingThemLost(t *testing.T) {
	e := Expect([]Ride{{ResortID: 1, Season: 2024, Day: 1, SkierID: 1, Time: 1, LiftID: 1}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/resorts/") {
			fmt.Fprint(w, `{"time":"x","numSkiers":5}`) // four skiers from an earlier run
			return
		}
		fmt.Fprint(w, "10")
	}))
	t.Cleanup(srv.Close)
	v, err := Verify(context.Background(), &Caller{Client: srv.Client(), Policy: DefaultRetryPolicy()}, srv.URL, e, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	v.Print(&out)
	if v.Lost() != 0 || v.Extra() != 4 || !strings.Contains(out.String(), "WARNING extra: 4") || !strings.Contains(out.String(), "lost: 0") {
		t.Errorf("verdict %+v, report:\n%s", v, out.String())
	}
}

func TestExpectDedupesIdenticalRides(t *testing.T) {
	r := Ride{ResortID: 1, Season: 2024, Day: 1, SkierID: 9, Time: 5, LiftID: 3}
	r2 := r
	r2.Time = 6
	e := Expect([]Ride{r, r, r2})
	sd := skierDay{resortDay{1, 2024, 1}, 9}
	if e.DayVertical[sd] != 60 || e.UniqueSkiers[sd.resortDay] != 1 {
		t.Errorf("expectation %+v; want vertical 60 (the duplicate counted once) and 1 skier", e)
	}
}

func TestWaitDrainedReturnsTheTimeUntilQueueDepthZero(t *testing.T) {
	var mu sync.Mutex
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		polls++
		depth := max(3-polls, 0) // 2, 1, then 0 on the third poll
		json.NewEncoder(w).Encode(Readiness{Status: "ok", QueueDepth: int64(depth)})
	}))
	t.Cleanup(srv.Close)
	d, err := WaitDrained(context.Background(), srv.Client(), srv.URL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if polls != 3 || d <= 0 {
		t.Errorf("returned %v after %d polls; want a positive wait ending at the third poll (the first with depth 0)", d, polls)
	}
}

func TestVerifyReportPrintsTheDrainTime(t *testing.T) {
	srv := httptest.NewServer(&lossyService{rides: map[Ride]struct{}{}})
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	Run(context.Background(), smallConfig(srv.URL), &out, &Progress{})
	if !strings.Contains(out.String(), "drained in ") {
		t.Errorf("verify output has no \"drained in\" line:\n%s", out.String())
	}
}

// TestVerifyWaitsOutAReadThatLagsTheStore: a store whose reads lag its
// writes (a DynamoDB index) answers short for a moment after the drain;
// Verify asks again within its allowance and finds nothing lost.
func TestVerifyWaitsOutAReadThatLagsTheStore(t *testing.T) {
	ride := Ride{ResortID: 1, Season: 2024, Day: 1, SkierID: 1, Time: 10, LiftID: 3}
	e := Expect([]Ride{ride})
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path]++
		n := asked[r.URL.Path]
		mu.Unlock()
		lagging := n <= 3 // the first three reads do not see the ride yet
		if strings.HasPrefix(r.URL.Path, "/resorts/") {
			fmt.Fprintf(w, `{"time":"x","numSkiers":%d}`, map[bool]int{true: 0, false: 1}[lagging])
			return
		}
		if lagging {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprint(w, ride.Vertical())
	}))
	t.Cleanup(srv.Close)
	v, err := Verify(context.Background(), &Caller{Client: srv.Client(), Policy: DefaultRetryPolicy()}, srv.URL, e, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.Lost() != 0 || v.Extra() != 0 {
		t.Errorf("verdict %+v; want nothing lost once the reads caught up", v)
	}
	mu.Lock()
	defer mu.Unlock()
	for path, n := range asked {
		if n != 4 {
			t.Errorf("%s asked %d times; want 4 (three lagging answers, then the right one)", path, n)
		}
	}
}
