package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/needs"
	"github.com/skidata/skidata/test/pgtest"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0.1, 1}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("Percentile(1..100 ms, %v) = %v; want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{3 * time.Millisecond}, 99); got != 3 {
		t.Errorf("Percentile of one = %v; want 3", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile of none = %v; want 0", got)
	}
}

func TestDataSetIsDeterministicAndInRange(t *testing.T) {
	ds := DefaultDataSet()
	ds.Rides = 5000
	a, err := ds.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ds.Generate()
	if !slices.Equal(a, b) {
		t.Fatal("two Generate calls with one seed differ")
	}
	for _, r := range a {
		if r.SkierID() < 1 || r.SkierID() > 100_000 || r.ResortID() < 1 || r.ResortID() > 10 || r.LiftID() < 1 || r.LiftID() > 40 ||
			r.Time() < 1 || r.Time() > 360 || r.DayID().Number() > ds.Days || r.SeasonID() != domain.MustSeason("2024") {
			t.Fatalf("ride out of the data set's ranges: %+v", r)
		}
	}
	ds.Seed++
	c, _ := ds.Generate()
	if slices.Equal(a, c) {
		t.Error("another seed gave the same rides")
	}
	q1, q2 := ds.Queries(a, 10), ds.Queries(a, 10)
	if !slices.Equal(q1, q2) || len(q1) != 10*len(Kinds) {
		t.Errorf("Queries not deterministic or not 10 of each kind: %d", len(q1))
	}
}

func TestBreakEvenUtilisationIsThePriceRatio(t *testing.T) {
	// $0.00065 a WCU-hour against 3,600 on-demand writes at $0.625 a million.
	if got := BreakEvenUtilisation(); math.Abs(got-0.2889) > 0.001 {
		t.Errorf("break-even utilisation = %.4f; want 0.2889", got)
	}
}

// The shape states what a resort would recognise: the dense workload's
// skier-days hold RidesPerSkierDay rides, the sparse one's about one.
func TestShapeStatesRidesPerSkierDay(t *testing.T) {
	ds := DefaultDataSet()
	ds.Rides = 20_000
	for wl, want := range map[string]float64{WorkloadDense: RidesPerSkierDay, WorkloadSparse: 1} {
		ds.Workload = wl
		rides, err := ds.Generate()
		if err != nil {
			t.Fatal(err)
		}
		s := ShapeOf(rides)
		if math.Abs(s.RidesPerSkier-want) > 0.05*want || s.Resorts != 10 || s.Days != 10 || s.Rides != ds.Rides ||
			math.Abs(s.SkiersPerResort-float64(s.SkierDays)/100) > 1e-9 {
			t.Errorf("%s: %+v; want %v rides a skier-day over 10 resorts × 10 days", wl, s, want)
		}
	}
}

// The dense workload: each skier-day's rides come in time order, days in
// order, and several skiers' days interleave.
func TestDenseWorkloadSendsEachSkierDayInTimeOrder(t *testing.T) {
	ds := DefaultDataSet()
	ds.Workload, ds.Rides = WorkloadDense, 20_000
	rides, err := ds.Generate()
	if err != nil || len(rides) != ds.Rides {
		t.Fatalf("Generate = %d rides, %v; want %d", len(rides), err, ds.Rides)
	}
	type skierDay struct {
		skier  domain.SkierID
		resort domain.ResortID
		day    domain.Day
	}
	last := map[skierDay]int32{}
	perDay := map[skierDay]int{}
	switches := 0
	for i, r := range rides {
		if i > 0 && rides[i-1].DayID().Compare(r.DayID()) > 0 {
			t.Fatalf("ride %d goes back from day %s to %s", i, rides[i-1].DayID(), r.DayID())
		}
		k := skierDay{r.SkierID(), r.ResortID(), r.DayID()}
		if tm, ok := last[k]; ok && tm > r.Time() {
			t.Fatalf("ride %d of skier-day %+v at time %d after %d", i, k, r.Time(), tm)
		}
		last[k] = r.Time()
		perDay[k]++
		if i > 0 && rides[i-1].SkierID() != r.SkierID() {
			switches++
		}
	}
	if avg := float64(len(rides)) / float64(len(perDay)); avg < RidesPerSkierDay/2 {
		t.Errorf("%.1f rides a skier-day; want about %d", avg, RidesPerSkierDay)
	}
	if switches < len(rides)/2 {
		t.Errorf("consecutive rides change skier %d times in %d: skier-days are not interleaved", switches, len(rides))
	}
}

// offByOne answers UniqueSkiers wrong, as a broken store would.
type offByOne struct{ ports.RideStore }

func (o offByOne) UniqueSkiers(ctx context.Context, r domain.ResortID, s domain.Season, d domain.Day) (int, error) {
	n, err := o.RideStore.UniqueSkiers(ctx, r, s, d)
	return n + 1, err
}

func TestRunCountsAnswersThatDifferFromTheReference(t *testing.T) {
	ctx := context.Background()
	ds := DefaultDataSet()
	ds.Rides = 500
	rides, _ := ds.Generate()
	queries := ds.Queries(rides, 5)
	want, err := Reference(ctx, memory.NewRideStore(), rides, queries)
	if err != nil {
		t.Fatal(err)
	}
	good, err := Run(ctx, &Target{Name: "memory", Store: memory.NewRideStore()}, rides, queries, want, LoadOptions{BatchSize: 50, Writers: 3})
	if err != nil || good.Mismatches != 0 || good.Stored == 0 || good.WriteCalls != 10 {
		t.Errorf("memory against itself: %d mismatches, %d stored, %d calls, %v; want 0, >0, 10", good.Mismatches, good.Stored, good.WriteCalls, err)
	}
	bad, err := Run(ctx, &Target{Name: "broken", Store: offByOne{memory.NewRideStore()}}, rides, queries, want, LoadOptions{BatchSize: 50, Writers: 3})
	if err != nil || bad.Mismatches != 5 || len(bad.Mismatched) != 5 {
		t.Errorf("store off by one on UniqueSkiers: %d mismatches, %v; want the 5 UniqueSkiers queries", bad.Mismatches, err)
	}
}

func TestReportRendersEveryStoreAndKind(t *testing.T) {
	r := Report{DataSet: DefaultDataSet(), QueriesPer: 3, Results: []Result{
		{Store: "memory", Rides: 10, RidesPerSec: 1000, Stored: 10, StoredUnit: "rides", Latencies: map[string]Latency{KindUniqueSkiers: {N: 3, P50ms: 0.5, P99ms: 2}}},
		{Store: "dynamo-adopted", Rides: 10, RidesPerSec: 50, Dynamo: true, WriteRequests: 1, WriteCU: 10, GSIWriteCU: 10, TotalWriteCU: 20, WriteCUPerRide: 2, Stored: 10, StoredUnit: "items", Mismatches: 1, Latencies: map[string]Latency{}},
	}}
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	for _, want := range []string{"### memory", "### dynamo-adopted", "| dynamo-adopted | 10 | 50.0 | 1 | 10.0 + 10.0 = 20.0 | 2.00 |", "| memory | 10 | 1000 | — |",
		"UniqueSkiers p50 / p99 | 0.50 / 2.00 ms", "| SkierDayRides |", "dynalite itself reports the table's units only", "list prices, check current"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	if r.Mismatches() != 1 {
		t.Errorf("Mismatches = %d; want 1", r.Mismatches())
	}
	var svg bytes.Buffer
	WriteLabSVG(&svg, []Report{r}, Traffic{PeakRides: 100, RidesPerMonth: 1e6})
	if s := svg.String(); !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "dynamo-adopted") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Errorf("SVG malformed:\n%s", s)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != 2 || back.Results[1].TotalWriteCU != 20 {
		t.Errorf("JSON round trip: %v, %+v", err, back.Results)
	}
}

// skibench end to end on a small data set: every store must give the memory
// store's answers, and the DynamoDB ones report their requests and units.
func TestSkibenchEndToEndStoresAgree(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	var out, errOut bytes.Buffer
	saved := filepath.Join(t.TempDir(), "units.json")
	// Four stores on dynalite take minutes on a loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Enough rides for the adopted model's resort index to stand out as
	// the hottest key; the comparison itself needs far fewer.
	const rides = 1000
	code := Main(ctx, []string{
		"--stores", "memory,dynamo-adopted,dynamo-counters,dynamo-sharded", "--rides", strconv.Itoa(rides), "--days", "3", "--skiers", "300",
		"--queries", "20", "--batch-size", "100", "--dynamo-endpoint", endpoint, "--json", "--save", saved,
	}, &out, &errOut)
	if code != 0 {
		t.Fatalf("skibench exit %d; stderr:\n%s", code, errOut.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out.String())
	}
	if len(r.Results) != 4 {
		t.Fatalf("%d results; want 4", len(r.Results))
	}
	for _, res := range r.Results {
		if res.Mismatches != 0 || res.Rides != rides || res.RidesPerSec <= 0 {
			t.Errorf("%s: %d mismatches, %d rides, %v rides/s", res.Store, res.Mismatches, res.Rides, res.RidesPerSec)
		}
		for _, k := range Kinds {
			if res.Latencies[k].N != 20 {
				t.Errorf("%s: %d %s queries timed; want 20", res.Store, res.Latencies[k].N, k)
			}
		}
	}
	if b, err := os.ReadFile(saved); err != nil || !bytes.Equal(b, out.Bytes()) {
		t.Errorf("--save wrote %d bytes (%v); want the JSON report printed", len(b), err)
	}
	if r.Shape.Rides != rides || r.Shape.SkierDays == 0 || r.Shape.Resorts != 10 || r.Shape.Days != 3 {
		t.Errorf("report's shape = %+v; want %d rides over 10 resorts and 3 days", r.Shape, rides)
	}
	adopted, counters, sharded := r.Results[1], r.Results[2], r.Results[3]
	// The units a ride by table and index add up to the total, and the
	// read units by kind to the mix's.
	for _, res := range r.Results[1:] {
		var w, rd float64
		for _, u := range res.WriteUnitsBy {
			w += u
		}
		for _, k := range Kinds {
			if res.ReadUnitsByKind[k] < 0.5 {
				t.Errorf("%s: %v read units a %s query; want at least one eventually consistent request's 0.5", res.Store, res.ReadUnitsByKind[k], k)
			}
			rd += res.ReadUnitsByKind[k] * float64(res.Latencies[k].N)
		}
		if math.Abs(w-res.WriteCUPerRide) > 1e-9 || math.Abs(rd-res.ReadCU) > 1e-6 {
			t.Errorf("%s: units by table %v sum to %v (total %v a ride); by kind to %v (total %v)", res.Store, res.WriteUnitsBy, w, res.WriteCUPerRide, rd, res.ReadCU)
		}
	}
	if adopted.WriteUnitsBy["skierTable/resort-index"] <= 0 || adopted.HotUnitsPerRide <= 0 || len(sharded.WriteUnitsBy) != 2 {
		t.Errorf("units by table: adopted %v (hot %v a ride), sharded %v; want adopted's index and sharded's two tables", adopted.WriteUnitsBy, adopted.HotUnitsPerRide, sharded.WriteUnitsBy)
	}
	// One index entry a ride item put (a ride the data set holds twice is
	// put twice).
	if adopted.WriteRequests != rides/25 || adopted.GSIWriteCU < float64(adopted.Stored) || adopted.GSIWriteCU > rides || adopted.Stored != r.Results[0].Stored {
		t.Errorf("adopted: %d write requests (want %d), GSI %v for %d items (want one each, %d rides)",
			adopted.WriteRequests, rides/25, adopted.GSIWriteCU, adopted.Stored, r.Results[0].Stored)
	}
	// The adopted model's hottest key is a resort on its index; the
	// sharded model has none that hot.
	if !strings.Contains(adopted.HotKey, "resort-index") || sharded.HotShare >= adopted.HotShare/4 || sharded.GSIWriteCU != 0 {
		t.Errorf("hottest keys: adopted %s %.3f, sharded %s %.3f (GSI %v); want the adopted resort index far hotter",
			adopted.HotKey, adopted.HotShare, sharded.HotKey, sharded.HotShare, sharded.GSIWriteCU)
	}
	if counters.GSIWriteCU != 0 || counters.Stored <= adopted.Stored {
		t.Errorf("counters: GSI %v (want 0), %d items (want more than the rides: counters too)", counters.GSIWriteCU, counters.Stored)
	}
	if !strings.Contains(errOut.String(), "every store gave the memory store's answers") {
		t.Errorf("stderr lacks the verdict:\n%s", errOut.String())
	}
}

// TestNoAWSCredentialsNeeded: skibench only ever talks to dynalite, through
// a strictness proxy of its own with the test's fixed credentials, so a
// machine with no AWS credentials anywhere (and an instance metadata
// service that does not answer, as off EC2) runs it all the same.
func TestNoAWSCredentialsNeeded(t *testing.T) {
	needs.Server(t, dynamotest.Server) // skibench starts its own
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_DISABLED"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+apitest.ClosedAddr(t))
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"--stores", "dynamo-adopted", "--rides", "10", "--queries", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d; want 0 without AWS credentials:\n%s", code, errOut.String())
	}
}

// TestEveryRegisteredStoreHasATarget: skibench compares the stores of the
// service's registry; one added there that OpenTarget cannot set up fails
// here rather than in the middle of a long run. (An unknown name is
// answered at once; a known one gets past the name check and fails, if at
// all, on what it needs: here a cancelled context.)
func TestEveryRegisteredStoreHasATarget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range StoreNames {
		_, err := OpenTarget(ctx, &Env{}, name)
		if err != nil && strings.Contains(err.Error(), "no set-up") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(StoreNames) < 3 {
		t.Errorf("StoreNames = %v; want the registry's stores", StoreNames)
	}
}

// analyzedAtFirstQuery records, on the first UniqueSkiers call, whether
// PostgreSQL holds a manual ANALYZE of the run's rides table
// (pg_stat_user_tables.last_analyze; autovacuum's is last_autoanalyze).
type analyzedAtFirstQuery struct {
	ports.RideStore
	t        *testing.T
	schema   string
	asked    bool
	analyzed bool
}

func (a *analyzedAtFirstQuery) UniqueSkiers(ctx context.Context, r domain.ResortID, s domain.Season, d domain.Day) (int, error) {
	if !a.asked {
		a.asked = true
		err := pgtest.Admin(a.t).QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'rides'`,
			a.schema).Scan(&a.analyzed)
		if err != nil {
			a.t.Errorf("read pg_stat_user_tables for %s.rides: %v", a.schema, err)
		}
	}
	return a.RideStore.UniqueSkiers(ctx, r, s, d)
}

// TestPostgresRidesAreAnalyzedBeforeTheFirstQuery: a deployment's
// autovacuum analyzes a freshly loaded table before long, so skibench
// times its queries against analyzed tables, not against plans made
// without statistics.
func TestPostgresRidesAreAnalyzedBeforeTheFirstQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := &Env{DatabaseURL: pgtest.URL(t), RunID: "analyze_" + NewRunID()}
	target, err := OpenTarget(ctx, env, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := target.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	probe := &analyzedAtFirstQuery{RideStore: target.Store, t: t, schema: "skibench_" + env.RunID}
	target.Store = probe
	ds := DefaultDataSet()
	ds.Rides = 500
	rides, _ := ds.Generate()
	var queries []Query
	for _, q := range ds.Queries(rides, 3) {
		if q.Kind == KindUniqueSkiers {
			queries = append(queries, q)
		}
	}
	want, err := Reference(ctx, memory.NewRideStore(), rides, queries)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, target, rides, queries, want, LoadOptions{BatchSize: 100, Writers: 2})
	if err != nil || res.Mismatches != 0 {
		t.Fatalf("Run: %v, %d mismatches", err, res.Mismatches)
	}
	if !probe.asked || !probe.analyzed {
		t.Errorf("at the first query (asked: %v) %s.rides had no ANALYZE; want it analyzed after the load, as autovacuum would have", probe.asked, probe.schema)
	}
}
