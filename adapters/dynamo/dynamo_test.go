package dynamo_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/dynamotest"
	"github.com/skidata/skidata/test/needs"
	"github.com/skidata/skidata/test/storetest"
)

// One dynalite for the whole test binary; each case has its own tables.
func TestMain(m *testing.M) {
	os.Exit(dynamotest.Main(m))
}

// contractRides keeps the bulk and concurrency cases of the suite quick on
// dynalite (a single Node.js process on a shared two-core machine). At 300
// rides the skier-days are as crowded as at any size (storetest.randomRides
// scales the skiers with the rides) and each of the four concurrent writers
// still writes every ride; the memory and PostgreSQL stores run 5,000.
const contractRides = 300

// newTables creates a model's tables under a fresh prefix on the client and
// deletes them when the test ends.
func newTables(t *testing.T, client *dynamodb.Client, model string) dynamo.Config {
	t.Helper()
	cfg := dynamo.Config{TablePrefix: dynamotest.Prefix(t), Model: model}
	ctx := dynamotest.Context(t)
	if err := dynamo.CreateTables(ctx, client, cfg.TablePrefix, model); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	t.Cleanup(func() {
		defs, _ := dynamo.TableDefinitions(cfg.TablePrefix, model)
		for _, d := range defs {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: d.TableName})
		}
	})
	return cfg
}

func rideStore(t *testing.T, model string, tune func(*dynamo.Config)) dynamo.Store {
	t.Helper()
	client := dynamotest.Client(t)
	cfg := newTables(t, client, model)
	if tune != nil {
		tune(&cfg)
	}
	s, err := dynamo.NewRideStore(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRideStoreContract runs the suite on each model in turn: the cases of
// one model run in parallel, the models one after another, so dynalite
// serves one model's load at a time.
func TestRideStoreContract(t *testing.T) {
	for _, model := range dynamo.Models {
		t.Run(model, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) ports.RideStore { return rideStore(t, model, nil) },
				storetest.Options{Rides: contractRides})
		})
	}
}

// Regression: the adopted and abandoned models asked for a skier's season
// totals with begins_with(SortKey, ""), which dynalite answers and AWS
// refuses ("cannot contain an empty string value"); through the
// strictness layer every model must answer.
func TestSeasonVerticalsSendNoEmptyKeyValue(t *testing.T) {
	eachModel(t, func(t *testing.T, model string) {
		s := rideStore(t, model, nil)
		ctx := dynamotest.Context(t)
		if err := s.AddRides(ctx, []domain.LiftRide{mustRide(t, 2, "2024", 1, 5, 10, 3)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.SkierSeasonVerticals(ctx, 5, []domain.ResortID{2})
		if sv := got[2]; err != nil || len(sv) != 1 || sv[0].TotalVert != 30 {
			t.Errorf("SkierSeasonVerticals = %v, %v; want resort 2: [{2024 30}]", got, err)
		}
	})
}

func TestResortStoreContract(t *testing.T) {
	for _, model := range dynamo.Models {
		t.Run(model, func(t *testing.T) {
			storetest.RunResorts(t, func(t *testing.T) ports.ResortStore {
				client := dynamotest.Client(t)
				return dynamo.NewResortStore(client, newTables(t, client, model))
			})
		})
	}
}

// eachModel runs f on every data model, each a parallel subtest.
func eachModel(t *testing.T, f func(t *testing.T, model string)) {
	for _, model := range dynamo.Models {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			f(t, model)
		})
	}
}

// dayList is the days of the given numbers.
func dayList(ns ...int) []domain.Day {
	out := make([]domain.Day, len(ns))
	for i, n := range ns {
		out[i] = domain.MustDay(n)
	}
	return out
}

func mustRide(t *testing.T, resort domain.ResortID, season string, day int, skier domain.SkierID, tm, lift int32) domain.LiftRide {
	t.Helper()
	r, err := domain.NewLiftRide(resort, domain.MustSeason(season), domain.MustDay(day), skier, tm, lift)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// With two items a page every query must follow LastEvaluatedKey over
// several pages and still see everything.
func TestQueriesFollowEveryPage(t *testing.T) {
	eachModel(t, func(t *testing.T, model string) {
		s := rideStore(t, model, func(c *dynamo.Config) { c.PageLimit = 2 })
		ctx := dynamotest.Context(t)
		var rides []domain.LiftRide
		for skier := domain.SkierID(1); skier <= 7; skier++ {
			for day := 1; day <= 3; day++ {
				rides = append(rides, mustRide(t, 1, "2024", day, skier, int32(10*day), 2))
			}
		}
		if err := s.AddRides(ctx, rides); err != nil {
			t.Fatal(err)
		}
		if n, err := s.UniqueSkiers(ctx, 1, domain.MustSeason("2024"), domain.MustDay(2)); err != nil || n != 7 {
			t.Errorf("UniqueSkiers over pages of 2 = %d, %v; want 7", n, err)
		}
		if days, err := s.SkierDays(ctx, 3, domain.MustSeason("2024")); err != nil || !slices.Equal(days, dayList(1, 2, 3)) {
			t.Errorf("SkierDays over pages of 2 = %v, %v; want [1 2 3]", days, err)
		}
		if sv, err := s.SkierSeasonVerticals(ctx, 3, []domain.ResortID{1}); err != nil || len(sv[1]) != 1 || sv[1][0].TotalVert != 60 {
			t.Errorf("SkierSeasonVerticals over pages of 2 = %v, %v; want [{2024 60}]", sv, err)
		}
		// The counters model adds 21 skier-day items and 3 days × 7
		// skiers spread over 7 resort-day shards; the sharded model a
		// marker per skier-day.
		wantItems := map[string]int64{dynamo.ModelAdopted: 21, dynamo.ModelAbandoned: 21, dynamo.ModelCounters: 21 + 21 + 21, dynamo.ModelSharded: 21 + 21}[model]
		if n, err := s.CountItems(ctx); err != nil || n != wantItems {
			t.Errorf("CountItems over pages of 2 = %d, %v; want %d", n, err, wantItems)
		}
		st := s.Stats()
		// 7 index entries (or shards) for the day at 2 a page: at least 4 requests.
		if got := st["UniqueSkiers"].Requests; got < 4 {
			t.Errorf("UniqueSkiers sent %d Query requests; want at least 4 pages", got)
		}
		if got := st["CountItems"].Requests; got < 11 {
			t.Errorf("CountItems sent %d Scan requests; want at least 11 pages", got)
		}
	})
}

// The abandoned model appends to a list: only its condition expression on
// RideKeys keeps a redelivered ride from being appended and added twice.
func TestAbandonedConditionKeepsRedeliveredRideOnce(t *testing.T) {
	t.Parallel()
	s := rideStore(t, dynamo.ModelAbandoned, nil)
	ctx := dynamotest.Context(t)
	r1 := mustRide(t, 1, "2024", 5, 9, 100, 4)
	r2 := mustRide(t, 1, "2024", 5, 9, 200, 6)
	for range 3 { // separate calls, so no in-batch dedupe helps
		if err := s.AddRides(ctx, []domain.LiftRide{r1}); err != nil {
			t.Fatalf("AddRides(redelivered ride): %v", err)
		}
	}
	if err := s.AddRides(ctx, []domain.LiftRide{r2, r1}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.SkierDayVertical(ctx, 1, domain.MustSeason("2024"), domain.MustDay(5), 9); err != nil || v != 100 {
		t.Errorf("TotalVertical after redeliveries = %d, %v; want 40+60 = 100", v, err)
	}
	rides, err := s.SkierDayRides(ctx, 9, domain.MustSeason("2024"), domain.MustDay(5))
	if err != nil || !slices.Equal(rides, []domain.LiftRide{r1, r2}) {
		t.Errorf("LiftList after redeliveries = %v, %v; want each ride once", rides, err)
	}
	if n, err := s.CountItems(ctx); err != nil || n != 1 {
		t.Errorf("items = %d, %v; want one skier-day item", n, err)
	}
}

// A skier-day item that would pass the item-size limit is refused with an
// ErrInvalid that says so. A dynalite of its own with 1 KB items reaches the
// limit after a few dozen rides instead of ~12,800.
func TestAbandonedFullSkierDayIsInvalid(t *testing.T) {
	t.Parallel()
	needs.Server(t, dynamotest.Server)
	srv, err := dynamosim.Start("--maxItemSizeKb", "1")
	if err != nil {
		t.Fatalf("no DynamoDB test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	client := dynamosim.ClientFor(srv.Endpoint)
	cfg := newTables(t, client, dynamo.ModelAbandoned)
	cfg.WriteConcurrency = 1
	s, err := dynamo.NewRideStore(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := dynamotest.Context(t)
	var rides []domain.LiftRide
	for tm := range int32(200) {
		rides = append(rides, mustRide(t, 1, "2024", 1, 1, tm, 1))
	}
	err = s.AddRides(ctx, rides)
	if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("AddRides past the item size = %v; want ErrInvalid saying the item is full", err)
	}
	// What was stored before the limit is intact and counted once.
	got, err := s.SkierDayRides(ctx, 1, domain.MustSeason("2024"), domain.MustDay(1))
	if err != nil || len(got) == 0 || len(got) >= len(rides) {
		t.Fatalf("rides stored before the limit = %d, %v; want some but not all", len(got), err)
	}
	// The estimate behind RidesPerSkierDayItem (150 fixed bytes, 32 a
	// ride) must not promise more than an item holds.
	if atLeast := (1024 - 150) / 32; len(got) < atLeast {
		t.Errorf("a 1 KB skier-day item held %d rides; the documented estimate promises %d", len(got), atLeast)
	}
	if v, err := s.SkierDayVertical(ctx, 1, domain.MustSeason("2024"), domain.MustDay(1), 1); err != nil || v != int64(10*len(got)) {
		t.Errorf("vertical = %d, %v; want %d", v, err, 10*len(got))
	}
}

func TestCreateTablesIsIdempotentAndDescribed(t *testing.T) {
	t.Parallel()
	client := dynamotest.Client(t)
	cfg := newTables(t, client, dynamo.ModelAdopted)
	ctx := dynamotest.Context(t)
	if err := dynamo.CreateTables(ctx, client, cfg.TablePrefix, cfg.Model); err != nil {
		t.Fatalf("CreateTables on existing tables: %v", err)
	}
	desc, err := dynamo.DescribeTables(ctx, client, cfg.TablePrefix, cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		cfg.TablePrefix + "skierTable: ACTIVE", "PAY_PER_REQUEST", "SkierID HASH, SortKey RANGE",
		"index resort-index", "ResortID HASH, SeasonDaySkier RANGE", "KEYS_ONLY", cfg.TablePrefix + "resortTable: ACTIVE",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("DescribeTables lacks %q:\n%s", want, desc)
		}
	}
	if _, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.TablePrefix + "skierTable")}); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownModelIsRefused(t *testing.T) {
	if _, err := dynamo.NewRideStore(nil, dynamo.Config{Model: "other"}); err == nil {
		t.Error("NewRideStore with an unknown model succeeded")
	}
}
