package loadgen

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
)

type resortDay struct{ Resort, Season, Day int32 }

type skierDay struct {
	resortDay
	Skier int32
}

// Expectation is what the store must hold, computed from the rides the
// client got a 201 for, deduplicated the way the server does (the six
// fields are the identity).
type Expectation struct {
	UniqueSkiers map[resortDay]int
	DayVertical  map[skierDay]int64
}

// Expect computes the expectation from the accepted rides.
func Expect(accepted []Ride) Expectation {
	seen := make(map[Ride]struct{}, len(accepted))
	skiers := map[resortDay]map[int32]struct{}{}
	e := Expectation{UniqueSkiers: map[resortDay]int{}, DayVertical: map[skierDay]int64{}}
	for _, r := range accepted {
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		rd := resortDay{r.ResortID, r.Season, r.Day}
		if skiers[rd] == nil {
			skiers[rd] = map[int32]struct{}{}
		}
		skiers[rd][r.SkierID] = struct{}{}
		e.DayVertical[skierDay{rd, r.SkierID}] += r.Vertical()
	}
	for rd, s := range skiers {
		e.UniqueSkiers[rd] = len(s)
	}
	return e
}

// Verdict is what verification found. Lost counts unique skiers missing
// from resort-day counts plus sampled skier-days whose vertical came out
// short; Extra the same the other way (rides the service held before this
// run, or rides counted twice).
type Verdict struct {
	ResortDays, MissingSkiers, ExtraSkiers int
	SkierDays, ShortDays, OverDays         int
}

// Lost is every shortfall found.
func (v Verdict) Lost() int { return v.MissingSkiers + v.ShortDays }

// Extra is every surplus found.
func (v Verdict) Extra() int { return v.ExtraSkiers + v.OverDays }

// Print writes the verdict; the last line is "lost: N".
func (v Verdict) Print(w io.Writer) {
	fmt.Fprintln(w, "== verify ==")
	fmt.Fprintf(w, "unique skiers: %d resort-days checked, %d skiers missing, %d extra\n", v.ResortDays, v.MissingSkiers, v.ExtraSkiers)
	fmt.Fprintf(w, "day vertical:  %d sampled skier-days checked, %d short, %d over\n", v.SkierDays, v.ShortDays, v.OverDays)
	if v.Extra() > 0 {
		fmt.Fprintf(w, "WARNING extra: %d (the service holds more than this run got 201 for: rides from an earlier run, or rides whose answer failed or was cut off after the service took them? --verify is exact only on a fresh service)\n", v.Extra())
	}
	fmt.Fprintf(w, "lost: %d\n", v.Lost())
}

// Readiness is /readyz's answer, as the spec defines it.
type Readiness = httpapi.Readiness

// WaitDrained polls /readyz until the queue depth is 0 or the deadline
// passes, and returns how long it waited: called right after the last POST,
// that is the time the service needed to store what it had accepted.
func WaitDrained(ctx context.Context, client *http.Client, base string, deadline time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	wait := 10 * time.Millisecond
	last := "no answer yet"
	for {
		req, err := withContext(ctx)(httpapi.NewGetReadyzRequest(httpapi.ServerURL(base)))
		if err != nil {
			return time.Since(start), fmt.Errorf("readyz request: %w", err)
		}
		if resp, err := client.Do(req); err != nil {
			last = err.Error()
		} else {
			var r Readiness
			err := json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			switch {
			case err != nil:
				last = fmt.Sprintf("status %d, unreadable body: %v", resp.StatusCode, err)
			case r.QueueDepth == 0:
				return time.Since(start), nil
			default:
				last = fmt.Sprintf("queueDepth %d", r.QueueDepth)
			}
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("queue not drained within %s: last %s", deadline, last)
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond) // short: the wait is reported as the drain time
	}
}

// Verify checks every resort-day's unique-skier count and the day vertical
// of up to sample skier-days (chosen with seed) against the expectation.
func Verify(ctx context.Context, c *Caller, base string, e Expectation, sample int, seed uint64) (Verdict, error) {
	var v Verdict
	server := httpapi.ServerURL(base)
	get := func(req *http.Request, err error) (string, int, []byte, error) {
		if err != nil {
			return "", 0, nil, fmt.Errorf("build request: %w", err)
		}
		url := req.URL.String()
		res := c.Do(ctx, func(ctx context.Context) (*http.Request, error) {
			return req.WithContext(ctx), nil
		}, true)
		if res.Err != nil && res.Status != http.StatusNotFound {
			return url, res.Status, nil, fmt.Errorf("GET %s: %w", url, res.Err)
		}
		return url, res.Status, res.Body, nil
	}
	rds := slices.SortedFunc(maps.Keys(e.UniqueSkiers), func(a, b resortDay) int {
		return cmp.Or(cmp.Compare(a.Resort, b.Resort), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Day, b.Day))
	})
	for _, rd := range rds {
		want := e.UniqueSkiers[rd]
		var got int
		err := untilNotShort(ctx, func() (bool, error) {
			url, _, body, err := get(httpapi.NewGetResortSkiersDayRequest(server, rd.Resort, rd.Season, rd.Day))
			if err != nil {
				return false, err
			}
			var answer struct {
				NumSkiers int `json:"numSkiers"`
			}
			if err := json.Unmarshal(body, &answer); err != nil {
				return false, fmt.Errorf("GET %s: body %q: %w", url, body, err)
			}
			got = answer.NumSkiers
			return got < want, nil
		})
		if err != nil {
			return v, err
		}
		v.ResortDays++
		v.MissingSkiers += max(want-got, 0)
		v.ExtraSkiers += max(got-want, 0)
	}
	days := slices.SortedFunc(maps.Keys(e.DayVertical), func(a, b skierDay) int {
		return cmp.Or(cmp.Compare(a.Resort, b.Resort), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Day, b.Day), cmp.Compare(a.Skier, b.Skier))
	})
	rng := rand.New(rand.NewPCG(seed, seed^0xfeed))
	rng.Shuffle(len(days), func(i, j int) { days[i], days[j] = days[j], days[i] })
	for _, sd := range days[:min(sample, len(days))] {
		want := e.DayVertical[sd]
		var got int64
		err := untilNotShort(ctx, func() (bool, error) {
			url, status, body, err := get(httpapi.NewGetSkierDayVerticalRequest(server, sd.Resort, itoa(sd.Season), itoa(sd.Day), sd.Skier))
			if err != nil {
				return false, err
			}
			got = 0
			if status != http.StatusNotFound { // 404: no rides, vertical 0
				if got, err = strconv.ParseInt(string(trimSpace(body)), 10, 64); err != nil {
					return false, fmt.Errorf("GET %s: body %q: %w", url, body, err)
				}
			}
			return got < want, nil
		})
		if err != nil {
			return v, err
		}
		v.SkierDays++
		if got < want {
			v.ShortDays++
		} else if got > want {
			v.OverDays++
		}
	}
	return v, nil
}

// lagAllowance is how long Verify asks again about an answer that is
// short before it counts the difference as lost: a store whose reads lag
// its writes (a DynamoDB index, read eventually consistently, behind the
// adopted and abandoned models' unique skiers) answers a moment late after
// the queue has drained, not wrongly.
var lagAllowance = 5 * time.Second

// untilNotShort calls ask until it says the answer is not short, or
// lagAllowance has passed; the caller keeps the last answer.
func untilNotShort(ctx context.Context, ask func() (short bool, err error)) error {
	end := time.Now().Add(lagAllowance)
	for {
		short, err := ask()
		if err != nil || !short || time.Now().After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // the last answer stands
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
