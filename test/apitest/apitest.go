// Package apitest is the end-to-end HTTP suite: every operation of
// openapi.yaml and every error case, against a running service on a real
// listener. Each store and queue combination's end-to-end test starts a
// service (Start) and calls Run; the suite expects a fresh store with the
// demo resorts.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/poll"
)

// Deadline bounds every wait for asynchronous work (a ride reaching the store).
const Deadline = 30 * time.Second

// Running is a service serving on a loopback port for one test.
type Running struct {
	Service *compose.Service
	// Base is its URL, http://127.0.0.1:port.
	Base    string
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// Serve builds the service cfg describes and serves it on a loopback port.
// Stop stops it as SIGTERM would; if the test has not stopped it, it is
// stopped at cleanup, and a failed shutdown fails the test.
func Serve(t *testing.T, cfg compose.Config) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, cleanup, err := compose.Build(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("build service (store %s, queue %s): %v", cfg.Store, cfg.Queue, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		cleanup()
		t.Fatal(err)
	}
	r := &Running{Service: svc, Base: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		defer cleanup()
		if r.stopped {
			return
		}
		if err := r.Stop(cfg.HTTP.ShutdownTimeout + cfg.ShutdownTimeout + 10*time.Second); err != nil {
			t.Errorf("service stopped with: %v", err)
		}
	})
	return r
}

// Stop stops the service as SIGTERM would and returns what Serve returned,
// or an error when it has not returned within wait.
func (r *Running) Stop(wait time.Duration) error {
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(wait):
		return fmt.Errorf("service did not stop within %s", wait)
	}
}

// Start serves the service cfg describes until the test ends (see Serve)
// and returns its base URL.
func Start(t *testing.T, cfg compose.Config) string {
	t.Helper()
	return Serve(t, cfg).Base
}

// Response is what a call returned.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request is a request made by one of the generated client's builders
// (httpapi.NewXxxRequest), or the error it gave; Req wraps the two so a
// builder's call can be passed straight to Send.
type Request struct {
	req *http.Request
	err error
}

// Req wraps a builder's result for Send.
func Req(req *http.Request, err error) Request { return Request{req, err} }

// Send sends a request made with the generated client (so the route is
// spelled by openapi.yaml, not by the test) and reads the whole answer.
func Send(t *testing.T, r Request) Response {
	t.Helper()
	if r.err != nil {
		t.Fatalf("build request: %v", r.err)
	}
	resp, err := http.DefaultClient.Do(r.req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.req.Method, r.req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// JSON is a raw request body for the generated WithBody builders: the error
// cases send bodies the spec's types cannot hold.
func JSON(body string) (string, io.Reader) { return "application/json", strings.NewReader(body) }

// Call sends one request to a URL the caller spelled, and reads the whole
// answer. The suite uses it only for what the generated client cannot
// express: path values of the wrong type ("abc" for an integer id), routes
// and methods that are not in the spec, and /metrics (outside the spec on
// purpose).
func Call(t *testing.T, method, url, body string) Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// expectError checks a status and that the body is a JSON message containing want.
func expectError(t *testing.T, r Response, status int, want string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("status %d, body %s; want %d", r.Status, r.Body, status)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q; want application/json", ct)
	}
	var m struct{ Message string }
	if err := json.Unmarshal(r.Body, &m); err != nil || m.Message == "" {
		t.Errorf("error body %q is not {\"message\":...}: %v", r.Body, err)
		return
	}
	if !strings.Contains(m.Message, want) {
		t.Errorf("message %q does not say %q", m.Message, want)
	}
}

func decode[T any](t *testing.T, r Response) T {
	t.Helper()
	var v T
	if r.Status != http.StatusOK {
		t.Fatalf("status %d, body %s; want 200", r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	return v
}

// Eventually polls check until it returns "" (success) or Deadline passes,
// then fails with the last complaint.
func Eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	poll.Until(t, Deadline, what, check)
}

type ride struct {
	resort, skier int32
	season, day   string
	time, lift    int32
}

// dayVertical is the GET of the ride's skier-day vertical.
func (r ride) dayVertical(server string) Request {
	return Req(httpapi.NewGetSkierDayVerticalRequest(server, r.resort, r.season, r.day, r.skier))
}

func post(t *testing.T, base string, r ride) {
	t.Helper()
	resp := Send(t, Req(httpapi.NewWriteNewLiftRideRequest(httpapi.ServerURL(base), r.resort, r.season, r.day, r.skier, httpapi.LiftRide{Time: &r.time, LiftID: &r.lift})))
	if resp.Status != http.StatusCreated {
		t.Fatalf("POST ride %+v: status %d, body %s; want 201", r, resp.Status, resp.Body)
	}
}

// Run runs the whole suite against the service at base.
func Run(t *testing.T, base string) {
	// Skier ids unique to this run, so the cases never see each other's rides.
	skier := 1_000_000 + rand.Int32N(1_000_000_000)
	t.Run("Resorts", func(t *testing.T) { testResorts(t, base) })
	t.Run("Seasons", func(t *testing.T) { testSeasons(t, base) })
	t.Run("WriteRideErrors", func(t *testing.T) { testWriteErrors(t, base, skier) })
	t.Run("RidesReadBack", func(t *testing.T) { testReadBack(t, base, skier+1) })
	t.Run("QueryErrors", func(t *testing.T) { testQueryErrors(t, base, skier+2) })
	t.Run("EveryRouteChecksAResortTheSameWay", func(t *testing.T) { testResortCheck(t, base, skier+3) })
	t.Run("RouterErrorsAreJSON", func(t *testing.T) { testRouterErrors(t, base) })
	t.Run("Health", func(t *testing.T) { testHealth(t, base) })
	// Last: it checks that the requests above were recorded.
	t.Run("Statistics", func(t *testing.T) { testStatistics(t, base) })
}

// testResortCheck: every route that names a resort answers an id out of
// range and an unknown id with the same status and message, whichever
// route it is.
func testResortCheck(t *testing.T, base string, skier int32) {
	s := httpapi.ServerURL(base)
	routes := map[string]func(resort int32) Request{
		"GET seasons": func(r int32) Request { return Req(httpapi.NewGetResortSeasonsRequest(s, r)) },
		"POST season": func(r int32) Request {
			return Req(httpapi.NewAddSeasonRequest(s, r, httpapi.AddSeasonJSONRequestBody{Year: ptr("2026")}))
		},
		"GET resort day skiers": func(r int32) Request { return Req(httpapi.NewGetResortSkiersDayRequest(s, r, 2024, 1)) },
		"GET day vertical":      func(r int32) Request { return Req(httpapi.NewGetSkierDayVerticalRequest(s, r, "2024", "1", skier)) },
		"POST ride": func(r int32) Request {
			return Req(httpapi.NewWriteNewLiftRideRequest(s, r, "2024", "1", skier, httpapi.WriteNewLiftRideJSONRequestBody{Time: ptr[int32](1), LiftID: ptr[int32](1)}))
		},
		"GET season totals": func(r int32) Request {
			return Req(httpapi.NewGetSkierResortTotalsRequest(s, skier, &httpapi.GetSkierResortTotalsParams{Resort: []string{fmt.Sprint(r)}}))
		},
	}
	for name, req := range routes {
		t.Run(name, func(t *testing.T) {
			expectError(t, Send(t, req(0)), 400, "resortID must be a positive integer, got 0")
			expectError(t, Send(t, req(999)), 404, "resort 999 does not exist; GET /resorts lists the resorts")
		})
	}
}

func ptr[T any](v T) *T { return &v }

func testResorts(t *testing.T, base string) {
	got := decode[struct {
		Resorts []struct {
			ResortName string
			ResortID   int32
		}
	}](t, Send(t, Req(httpapi.NewGetResortsRequest(httpapi.ServerURL(base)))))
	if len(got.Resorts) < 10 {
		t.Fatalf("resorts = %+v; want the ten demo resorts", got.Resorts)
	}
	for i, r := range got.Resorts[:10] {
		if r.ResortID != int32(i+1) || r.ResortName == "" {
			t.Errorf("resort %d = %+v; want id %d with a name", i, r, i+1)
		}
	}
}

func testSeasons(t *testing.T, base string) {
	s := httpapi.ServerURL(base)
	seasons := func(id int32) []string {
		return decode[struct{ Seasons []string }](t, Send(t, Req(httpapi.NewGetResortSeasonsRequest(s, id)))).Seasons
	}
	addSeason := func(id int32, body string) Response {
		ct, rd := JSON(body)
		return Send(t, Req(httpapi.NewAddSeasonRequestWithBody(s, id, ct, rd)))
	}
	if got := seasons(2); !slices.Equal(got, []string{"2024", "2025"}) {
		t.Errorf("seasons of resort 2 = %v; want [2024 2025]", got)
	}
	r := addSeason(2, `{"year":"2026"}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("addSeason: %d %s; want 201", r.Status, r.Body)
	}
	if got := seasons(2); !slices.Equal(got, []string{"2024", "2025", "2026"}) {
		t.Errorf("seasons after adding 2026 = %v", got)
	}
	if r := addSeason(2, `{"year":"2026"}`); r.Status != http.StatusCreated {
		t.Errorf("adding a season again: %d %s; want 201 (idempotent)", r.Status, r.Body)
	}
	// A ride in the new season is now accepted.
	post(t, base, ride{resort: 2, skier: 77, season: "2026", day: "3", time: 5, lift: 5})

	expectError(t, Send(t, Req(httpapi.NewGetResortSeasonsRequest(s, 999))), 404, "resort 999 does not exist")
	expectError(t, Send(t, Req(httpapi.NewGetResortSeasonsRequest(s, 0))), 400, "resortID must be a positive integer")
	expectError(t, Call(t, "GET", base+"/resorts/abc/seasons", ""), 400, "resortID must be a whole number") // not an int32: no builder can send it
	expectError(t, addSeason(999, `{"year":"2026"}`), 404, "resort 999 does not exist")
	expectError(t, addSeason(1, `{}`), 400, "year is required")
	expectError(t, addSeason(1, `{"year":"26"}`), 400, "four-digit year")
	expectError(t, addSeason(1, `{"year":2026}`), 400, "must be a string")
	expectError(t, addSeason(1, `{"year":`), 400, "not valid JSON")
	expectError(t, addSeason(1, `{"year":"2027","pad":"`+strings.Repeat("x", 5000)+`"}`), 413, "limit")
}

func testWriteErrors(t *testing.T, base string, skier int32) {
	s := httpapi.ServerURL(base)
	good := ride{resort: 1, skier: skier, season: "2024", day: "1"}
	body := `{"time":10,"liftID":5}`
	// at is the good ride with one path value changed.
	at := func(change func(*ride)) ride { r := good; change(&r); return r }
	cases := []struct {
		name       string
		ride       ride
		body, want string
		status     int
	}{
		{"day zero", at(func(r *ride) { r.day = "0" }), body, "dayID must be between 1 and 366", 400},
		{"day 367", at(func(r *ride) { r.day = "367" }), body, "dayID must be between 1 and 366", 400},
		{"day not a number", at(func(r *ride) { r.day = "monday" }), body, "dayID must be a whole number", 400},
		{"season not a year", at(func(r *ride) { r.season = "24" }), body, "seasonID must be a four-digit year", 400},
		{"resort zero", at(func(r *ride) { r.resort = 0 }), body, "resortID must be a positive integer", 400},
		{"skier negative", at(func(r *ride) { r.skier = -4 }), body, "skierID must be a positive integer", 400},
		{"lift missing", good, `{"time":10}`, "liftID is required", 400},
		{"time missing", good, `{"liftID":5}`, "time is required", 400},
		{"time negative", good, `{"time":-1,"liftID":5}`, "time must be between 0 and 1439", 400},
		{"lift zero", good, `{"time":1,"liftID":0}`, "liftID must be between 1 and 1000", 400},
		{"lift wrong type", good, `{"time":1,"liftID":"five"}`, "liftID must be an integer", 400},
		{"lift not whole", good, `{"time":1,"liftID":1.5}`, "liftID must be an integer", 400},
		{"malformed JSON", good, `{"time":1,`, "not valid JSON", 400},
		{"not JSON at all", good, `time=1`, "not valid JSON", 400},
		{"empty body", good, ``, "request body is required", 400},
		{"body over 4 KiB", good, `{"time":1,"liftID":2,"x":"` + strings.Repeat("y", 5000) + `"}`, "limit", 413},
		{"unknown resort", at(func(r *ride) { r.resort = 999 }), body, "resort 999 does not exist", 404},
		{"unregistered season", at(func(r *ride) { r.season = "1999" }), body, "season 1999 is not registered for resort 1", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, rd := JSON(c.body)
			r := c.ride
			expectError(t, Send(t, Req(httpapi.NewWriteNewLiftRideRequestWithBody(s, r.resort, r.season, r.day, r.skier, ct, rd))), c.status, c.want)
		})
	}
	// Resort ids that are not int32s: the generated client cannot send them.
	for name, c := range map[string]struct{ resort, want string }{
		"resort not a number": {"one", "resortID must be a whole number"},
		"resort over int32":   {"4294967296", "resortID must be a whole number that fits in 32 bits"},
	} {
		t.Run(name, func(t *testing.T) {
			expectError(t, Call(t, "POST", fmt.Sprintf("%s/skiers/%s/seasons/2024/days/1/skiers/%d", base, c.resort, skier), body), 400, c.want)
		})
	}
	// None of the rejected rides reached the store.
	expectError(t, Send(t, Req(httpapi.NewGetSkierSeasonDaysRequest(s, "2024", skier))), 404, "no rides")
}

func testReadBack(t *testing.T, base string, skier int32) {
	dayNum := 100 + rand.Int32N(200)
	day := fmt.Sprint(dayNum)
	rides := []ride{
		{resort: 3, skier: skier, season: "2024", day: day, time: 30, lift: 4},  // 40
		{resort: 3, skier: skier, season: "2024", day: day, time: 10, lift: 12}, // 120
		{resort: 3, skier: skier, season: "2024", day: day, time: 10, lift: 12}, // duplicate: counts once
		{resort: 4, skier: skier, season: "2024", day: day, time: 20, lift: 7},  // 70, other resort, same day
		{resort: 3, skier: skier, season: "2024", day: "2", time: 5, lift: 1},   // 10, other day
		{resort: 3, skier: skier, season: "2025", day: "2", time: 5, lift: 3},   // 30, other season
		{resort: 3, skier: skier + 1000, season: "2024", day: day, time: 1, lift: 1},
	}
	for _, r := range rides {
		post(t, base, r)
	}
	// totals is getSkierResortTotals of the skier over resorts and seasons (nil: every season).
	totals := func(resorts, seasons []string) Response {
		p := &httpapi.GetSkierResortTotalsParams{Resort: resorts}
		if seasons != nil {
			p.Season = &seasons
		}
		return Send(t, Req(httpapi.NewGetSkierResortTotalsRequest(httpapi.ServerURL(base), skier, p)))
	}
	s := httpapi.ServerURL(base)
	Eventually(t, "day vertical of the posted rides", func() string {
		r := Send(t, rides[0].dayVertical(s))
		if r.Status != 200 || strings.TrimSpace(string(r.Body)) != "160" {
			return fmt.Sprintf("%d %s (want 200 160)", r.Status, r.Body)
		}
		return ""
	})
	// Wait for the last ride too (the queue is FIFO per skier but not across them).
	Eventually(t, "the second skier's ride", func() string {
		r := Send(t, rides[6].dayVertical(s))
		if r.Status != 200 {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		return ""
	})
	Eventually(t, "every ride stored", func() string {
		r := totals([]string{"3", "4"}, nil)
		want := `{"resorts":[{"seasonID":"2024","totalVert":240},{"seasonID":"2025","totalVert":30}]}`
		if r.Status != 200 || strings.TrimSpace(string(r.Body)) != want {
			return fmt.Sprintf("%d %s (want %s)", r.Status, r.Body, want)
		}
		return ""
	})

	if r := Send(t, ride{resort: 4, skier: skier, season: "2024", day: day}.dayVertical(s)); strings.TrimSpace(string(r.Body)) != "70" {
		t.Errorf("day vertical at resort 4 = %d %s; want 70", r.Status, r.Body)
	}
	answer := func(r Response) string { return fmt.Sprintf("%d %s", r.Status, strings.TrimSpace(string(r.Body))) }
	if got, want := answer(totals([]string{"3"}, nil)), `200 {"resorts":[{"seasonID":"2024","totalVert":170},{"seasonID":"2025","totalVert":30}]}`; got != want {
		t.Errorf("totals at resort 3 = %s; want %s", got, want)
	}
	if got, want := answer(totals([]string{"3"}, []string{"2025"})), `200 {"resorts":[{"seasonID":"2025","totalVert":30}]}`; got != want {
		t.Errorf("totals at resort 3 in 2025 = %s; want %s", got, want)
	}
	if got, want := answer(totals([]string{"3", "4"}, []string{"2024", "2025"})), `200 {"resorts":[{"seasonID":"2024","totalVert":240},{"seasonID":"2025","totalVert":30}]}`; got != want {
		t.Errorf("totals at resorts 3+4 in 2024+2025 = %s; want %s", got, want)
	}
	skiers := decode[struct {
		Time      string
		NumSkiers int32
	}](t, Send(t, Req(httpapi.NewGetResortSkiersDayRequest(s, 3, 2024, dayNum))))
	if skiers.NumSkiers != 2 || skiers.Time != "Stevens Pass" {
		t.Errorf("resort 3 day %s skiers = %+v; want 2 at Stevens Pass", day, skiers)
	}
	days := decode[struct {
		SkierID   int32
		SeasonID  string
		DaysSkied int
		DayIDs    []string
	}](t, Send(t, Req(httpapi.NewGetSkierSeasonDaysRequest(s, "2024", skier))))
	if days.SkierID != skier || days.SeasonID != "2024" || days.DaysSkied != 2 || !slices.Equal(days.DayIDs, []string{"2", day}) {
		t.Errorf("days skied = %+v; want 2 days [2 %s]", days, day)
	}
	dr := Send(t, Req(httpapi.NewGetSkierDayRidesRequest(s, "2024", day, skier)))
	want := fmt.Sprintf(`{"dayID":"%s","rides":[{"liftID":12,"resortID":3,"time":10,"vertical":120},{"liftID":7,"resortID":4,"time":20,"vertical":70},{"liftID":4,"resortID":3,"time":30,"vertical":40}],"seasonID":"2024","skierID":%d,"totalVert":230}`, day, skier)
	if got := strings.TrimSpace(string(dr.Body)); dr.Status != 200 || got != want {
		t.Errorf("rides of the day = %d %s;\nwant %s", dr.Status, got, want)
	}
}

func testQueryErrors(t *testing.T, base string, skier int32) {
	s := httpapi.ServerURL(base)
	none := ride{resort: 1, skier: skier, season: "2024", day: "5"}
	totals := func(skier int32, resorts []string, seasons ...string) Request {
		p := &httpapi.GetSkierResortTotalsParams{Resort: resorts}
		if seasons != nil {
			p.Season = &seasons
		}
		return Req(httpapi.NewGetSkierResortTotalsRequest(s, skier, p))
	}
	expectError(t, Send(t, none.dayVertical(s)), 404, "no rides")
	expectError(t, Send(t, ride{resort: 1, skier: skier, season: "2024", day: "400"}.dayVertical(s)), 400, "dayID must be between")
	expectError(t, Send(t, ride{resort: 0, skier: skier, season: "2024", day: "5"}.dayVertical(s)), 400, "resortID must be a positive")
	expectError(t, Send(t, totals(skier, []string{"1"})), 404, "no rides")
	expectError(t, Send(t, totals(skier, nil)), 400, "resort is required")
	expectError(t, Send(t, totals(skier, []string{"x"})), 400, "resort must be a resort id")
	expectError(t, Send(t, totals(skier, []string{"1"}, "99")), 400, "four-digit year")
	expectError(t, Send(t, totals(0, []string{"1"})), 400, "skierID must be a positive")
	expectError(t, Send(t, Req(httpapi.NewGetSkierSeasonDaysRequest(s, "2024", skier))), 404, "no rides in season 2024")
	expectError(t, Send(t, Req(httpapi.NewGetSkierSeasonDaysRequest(s, "20", skier))), 400, "four-digit year")
	expectError(t, Send(t, Req(httpapi.NewGetSkierDayRidesRequest(s, "2024", "9", skier))), 404, "no rides on day 9")
	expectError(t, Send(t, Req(httpapi.NewGetSkierDayRidesRequest(s, "2024", "0", skier))), 400, "dayID must be between")
	expectError(t, Send(t, Req(httpapi.NewGetResortSkiersDayRequest(s, 999, 2024, 1))), 404, "resort 999 does not exist")
	expectError(t, Send(t, Req(httpapi.NewGetResortSkiersDayRequest(s, 1, 24, 1))), 400, "four-digit year")
	expectError(t, Send(t, Req(httpapi.NewGetResortSkiersDayRequest(s, 1, 2024, 0))), 400, "dayID must be between")
	expectError(t, Call(t, "GET", base+"/resorts/1/seasons/2024/day/x/skiers", ""), 400, "dayID must be a whole number") // not an int32: no builder can send it
	// A known resort with nobody on the slopes that day has zero skiers.
	got := decode[struct{ NumSkiers int32 }](t, Send(t, Req(httpapi.NewGetResortSkiersDayRequest(s, 10, 2025, 366))))
	if got.NumSkiers != 0 {
		t.Errorf("skiers on an empty day = %d; want 0", got.NumSkiers)
	}
}

// testRouterErrors sends what the spec does not have, so it spells the URLs.
func testRouterErrors(t *testing.T, base string) {
	expectError(t, Call(t, "GET", base+"/no/such/route", ""), 404, "no route for GET /no/such/route")
	expectError(t, Call(t, "DELETE", base+"/resorts", ""), 405, "method DELETE is not allowed on /resorts")
	expectError(t, Call(t, "PUT", base+"/skiers/1/seasons/2024/days/1/skiers/1", `{}`), 405, "not allowed")
}

func testHealth(t *testing.T, base string) {
	s := httpapi.ServerURL(base)
	if got := decode[struct{ Status string }](t, Send(t, Req(httpapi.NewGetHealthzRequest(s)))); got.Status != "ok" {
		t.Errorf("healthz status = %q", got.Status)
	}
	got := decode[struct {
		Status     string
		QueueDepth *int64
		Checks     map[string]string
	}](t, Send(t, Req(httpapi.NewGetReadyzRequest(s))))
	if got.Status != "ok" || got.QueueDepth == nil {
		t.Errorf("readyz = %+v; want status ok with a queueDepth", got)
	}
	for name, state := range got.Checks {
		if state != "ok" {
			t.Errorf("readyz check %s = %q; want ok", name, state)
		}
	}
}

func testStatistics(t *testing.T, base string) {
	var got struct {
		EndpointStats []struct {
			URL       string
			Operation string
			Mean, Max *int32
		}
	}
	r := Send(t, Req(httpapi.NewGetPerformanceStatsRequest(httpapi.ServerURL(base))))
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != 200 {
		t.Fatalf("statistics: %d %s %v", r.Status, r.Body, err)
	}
	want := map[string]bool{
		"POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}": false,
		"GET /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}":  false,
		"GET /resorts":                     false,
		"GET /skiers/{skierID}/vertical":   false,
		"POST /resorts/{resortID}/seasons": false,
		"GET /resorts/{resortID}/seasons/{seasonID}/day/{dayID}/skiers": false,
	}
	for _, s := range got.EndpointStats {
		if s.Mean == nil || s.Max == nil || *s.Mean < 0 || *s.Max < *s.Mean {
			t.Errorf("stat %+v: want 0 <= mean <= max", s)
		}
		key := s.Operation + " " + s.URL
		if _, ok := want[key]; ok {
			want[key] = true
		}
		if strings.Contains(s.URL, "/no/such") {
			t.Errorf("an unmatched path was recorded: %+v", s)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("statistics has no entry for %s; got %s", k, bytes.TrimSpace(r.Body))
		}
	}
}

// ClosedAddr is a loopback address nothing listens on, for tests of what a
// client says when its server is not there. Its port stays bound, without
// listening, until the test ends: a connection to it is refused, and no
// other process (tests run several at once) can start listening there, as
// one could on a port merely closed.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
