package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// The resort and season of every ride: one of the demo catalogue's.
const (
	resort = 1
	season = 2025
)

// load is the open-loop load of a run: Count requests, Rate a second,
// every GetEvery-th a GET (alternately a day vertical and a season total)
// about the skier of the ride posted just before it, the others POSTs.
type load struct {
	Rate     float64
	Count    int
	GetEvery int
	// Skiers is how many skiers the rides go to; ride n is skier
	// FirstSkier + n mod Skiers.
	Skiers, FirstSkier int
	// Seed draws the rides' lifts.
	Seed    uint64
	Timeout time.Duration
	// Stop, when closed, ends the load before Count requests: no request
	// is sent after it.
	Stop <-chan struct{}
}

// ride is ride number n. k = n div Skiers numbers the skier's rides: the
// k-th is at minute k mod 1440 of day 1 + k div 1440, so every ride of the
// run is unique and a stored row tells which ride it is; its lift is drawn
// from the seed (so verticals differ).
func (l load) ride(n int) loadgen.Ride {
	k := n / l.Skiers
	return loadgen.Ride{
		ResortID: resort, Season: season,
		Day:     int32(1 + k/1440),
		SkierID: int32(l.FirstSkier + n%l.Skiers),
		Time:    int32(k % 1440),
		LiftID:  int32(1 + splitmix(l.Seed+uint64(n))%40),
	}
}

// splitmix is SplitMix64's output function: a well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// op is request j: a POST of ride n, or a GET about ride n's skier.
func (l load) op(j int) (kind string, n int) {
	if l.GetEvery <= 0 {
		return OpPost, j
	}
	q, r := j/l.GetEvery, j%l.GetEvery
	posts := l.GetEvery - 1 // in every group of GetEvery requests
	if r < posts {
		return OpPost, q*posts + r
	}
	n = q*posts + posts - 1 // the ride posted just before
	if q%2 == 0 {
		return OpDay, n
	}
	return OpSeason, n
}

// Rides is how many rides the load posts.
func (l load) Rides() int {
	n := 0
	for j := range l.Count {
		if k, _ := l.op(j); k == OpPost {
			n++
		}
	}
	return n
}

// request builds request j against base.
func (l load) request(base string, j int) (*http.Request, error) {
	o := l.asked(j)
	if o.Kind != OpPost {
		return getRequest(base, o)
	}
	r := o.Ride
	return httpapi.NewWriteNewLiftRideRequest(httpapi.ServerURL(base), r.ResortID, strconv.Itoa(int(r.Season)), strconv.Itoa(int(r.Day)), r.SkierID,
		httpapi.WriteNewLiftRideJSONRequestBody{Time: &r.Time, LiftID: &r.LiftID})
}

// getRequest is the GET that reads what o (a day, season or skiers op) is
// about.
func getRequest(base string, o Op) (*http.Request, error) {
	r := o.Ride
	switch o.Kind {
	case OpDay:
		return httpapi.NewGetSkierDayVerticalRequest(httpapi.ServerURL(base), r.ResortID, strconv.Itoa(int(r.Season)), strconv.Itoa(int(r.Day)), r.SkierID)
	case OpSkiers:
		return httpapi.NewGetResortSkiersDayRequest(httpapi.ServerURL(base), r.ResortID, r.Season, r.Day)
	}
	return httpapi.NewGetSkierResortTotalsRequest(httpapi.ServerURL(base), r.SkierID, &httpapi.GetSkierResortTotalsParams{
		Resort: []string{strconv.Itoa(int(r.ResortID))}, Season: &[]string{strconv.Itoa(int(r.Season))}})
}

// asked is what request j is about, as the history keeps it.
func (l load) asked(j int) Op {
	kind, n := l.op(j)
	r := l.ride(n)
	switch kind {
	case OpPost:
		return Op{Kind: kind, N: n, Ride: r}
	case OpDay:
		return Op{Kind: kind, Ride: loadgen.Ride{ResortID: r.ResortID, Season: r.Season, Day: r.Day, SkierID: r.SkierID}}
	default:
		return Op{Kind: kind, Ride: loadgen.Ride{ResortID: r.ResortID, Season: r.Season, SkierID: r.SkierID}}
	}
}

// run sends the load to the API process where base says it is when each
// request is built, and returns every request's Op, times since zero.
func (l load) run(ctx context.Context, base func() string, zero time.Time) []Op {
	ops := make([]Op, l.Count)
	client := &http.Client{Timeout: l.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	defer client.CloseIdleConnections()
	loop := loadgen.OpenLoop{Rate: l.Rate, Count: l.Count, MaxInFlight: max(64, int(l.Rate*l.Timeout.Seconds())+64),
		Grace: l.Timeout + time.Second, Clock: loadgen.RealClock{}, KeepBody: true, Stop: l.Stop}
	sent := loop.Run(ctx, client, func(j int) (*http.Request, error) { return l.request(base(), j) }, func(j int, res loadgen.Result) {
		o := l.asked(j)
		o.Start = res.Start.Sub(zero)
		o.Sent, o.End = o.Start+res.Lag, o.Start+res.Latency
		o.Status = res.Status
		if res.Err != nil {
			o.Err = res.Err.Error()
		}
		if o.Read() {
			v, err := readValue(o.Kind, res.Status, res.Body)
			if err != nil {
				o.Status, o.Err = 0, err.Error() // an answer that says nothing
			}
			o.Value = v
		}
		ops[j] = o
	})
	return ops[:sent]
}

// readValue is the vertical (or, for a skiers op, the number of skiers)
// a GET's answer says.
func readValue(kind string, status int, body []byte) (int64, error) {
	if status == http.StatusNotFound {
		return 0, nil
	}
	if kind == OpSkiers {
		var rs httpapi.ResortSkiers
		if err := json.Unmarshal(body, &rs); err != nil {
			return 0, fmt.Errorf("resort skiers %q: %w", body, err)
		}
		return int64(rs.NumSkiers), nil
	}
	if kind == OpDay {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(body)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("day vertical %q: %w", body, err)
		}
		return v, nil
	}
	var sv httpapi.SkierVertical
	if err := json.Unmarshal(body, &sv); err != nil {
		return 0, fmt.Errorf("season totals %q: %w", body, err)
	}
	var v int64
	for _, s := range sv.Resorts {
		if s.SeasonID == strconv.Itoa(season) {
			v += s.TotalVert
		}
	}
	return v, nil
}

// readTotal asks the API once for what op (a day or season GET) is about.
func readTotal(ctx context.Context, client *http.Client, base string, o Op) (int64, error) {
	req, err := getRequest(base, o)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		return 0, fmt.Errorf("%s: status %d: %s", req.URL.Path, resp.StatusCode, bytes.TrimSpace(body.Bytes()))
	}
	return readValue(o.Kind, resp.StatusCode, body.Bytes())
}
