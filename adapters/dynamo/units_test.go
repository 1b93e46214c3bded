package dynamo_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/dynamotest"
)

// The units skibench reports are the proxy's bill (write units per table
// and index) and the read units the store records per query. These tests
// run a small fixed workload through every model and compare both with a
// computation from AWS's rules, written out below: item sizes from
// attribute names and values, writes per KB of the larger of the images
// before and after (a write refused by its condition: the item as it is),
// index entries written when they appear, change or disappear, reads per
// 4 KB of all the items a request reads, half for an eventually
// consistent read, at least one 4 KB read a request.

// awsSize is an item's size by AWS's documented rules ("Item sizes and
// formats").
func awsSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + awsValueSize(v)
	}
	return n
}

func awsValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return awsNumberSize(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += awsNumberSize(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3 // a list: 3 bytes, and 1 per element
		for _, e := range v.Value {
			n += 1 + awsValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3 // a map: 3 bytes, and 1 per element besides its name
		for name, e := range v.Value {
			n += 1 + len(name) + awsValueSize(e)
		}
		return n
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	}
	panic(fmt.Sprintf("no size rule for %T", v))
}

// awsNumberSize: 1 byte per two significant digits (leading and trailing
// zeros are not), plus 1. The workload's numbers are whole and positive.
func awsNumberSize(s string) int {
	digits := strings.Trim(s, "0")
	return (len(digits)+1)/2 + 1
}

// wcu is the write units of an item of b bytes: 1 per KB, at least 1.
func wcu(b int) float64 { return math.Max(1, math.Ceil(float64(b)/1024)) }

// rcu is the read units of one request reading the items: 1 per 4 KB of
// their total size (0.5 when eventually consistent), at least one 4 KB.
func rcu(consistent bool, items ...map[string]types.AttributeValue) float64 {
	total := 0
	for _, it := range items {
		total += awsSize(it)
	}
	units := math.Max(1, math.Ceil(float64(total)/4096))
	if !consistent {
		units /= 2
	}
	return units
}

// project keeps the named attributes of each item (an index entry).
func project(items []map[string]types.AttributeValue, names ...string) []map[string]types.AttributeValue {
	out := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		out[i] = map[string]types.AttributeValue{}
		for _, n := range names {
			if v, ok := it[n]; ok {
				out[i][n] = v
			}
		}
	}
	return out
}

// withAttrs is a copy of it with some attributes replaced.
func withAttrs(it map[string]types.AttributeValue, set map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for k, v := range it {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}

// The workload: 140 rides of skier 7 and 2 of skier 8, all at resort 3 on
// day 1 of 2024, sent twice (a redelivery). Times and lifts end in zeros,
// so numbers sized with their trailing zeros would come out larger.
const unitsResort = domain.ResortID(3)

var (
	unitsSeason = domain.MustSeason("2024")
	unitsDay    = domain.MustDay(1)
)

func unitsWorkload(t *testing.T) (skier7, skier8 []domain.LiftRide) {
	t.Helper()
	ride := func(skier domain.SkierID, i int) domain.LiftRide {
		r, err := domain.NewLiftRide(unitsResort, unitsSeason, unitsDay, skier, int32(10*(i+1)), int32(100*(i%10+1)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 140 {
		skier7 = append(skier7, ride(7, i))
	}
	for i := range 2 {
		skier8 = append(skier8, ride(8, i))
	}
	return skier7, skier8
}

// unitsRun loads the workload twice into a fresh model behind a proxy of
// its own, asks each query once, and returns the proxy's write units per
// table and index ("skierTable", "skierTable/resort-index"), the store's
// read units per query, and the items stored per table, as dynalite
// holds them (read without the proxy: unbilled).
func unitsRun(t *testing.T, model string) (writes, reads map[string]float64, stored map[string][]map[string]types.AttributeValue) {
	t.Helper()
	ctx := dynamotest.Context(t)
	px := dynamotest.NewProxy(t, dynamosim.Options{})
	client := dynamosim.ClientFor(px.URL)
	cfg := newTables(t, client, model)
	cfg.WriteConcurrency = 1 // the writes in a known order
	store, err := dynamo.NewRideStore(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	skier7, skier8 := unitsWorkload(t)
	rides := append(append([]domain.LiftRide{}, skier7...), skier8...)
	for range 2 {
		if err := store.AddRides(ctx, rides); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.UniqueSkiers(ctx, unitsResort, unitsSeason, unitsDay); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SkierDayVertical(ctx, unitsResort, unitsSeason, unitsDay, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SkierSeasonVerticals(ctx, 7, []domain.ResortID{unitsResort}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SkierDays(ctx, 7, unitsSeason); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SkierDayRides(ctx, 7, unitsSeason, unitsDay); err != nil {
		t.Fatal(err)
	}
	writes = map[string]float64{}
	for _, p := range px.Partitions() {
		name := strings.TrimPrefix(p.Table, cfg.TablePrefix)
		if p.Index != "" {
			name += "/" + p.Index
		}
		writes[name] += p.WriteUnits
	}
	reads = map[string]float64{}
	for op, st := range store.Stats() {
		if op != "AddRides" {
			reads[op] = st.ReadCU
		}
	}
	up := dynamosim.ClientFor(dynamotest.Upstream(t))
	defs, _ := dynamo.TableDefinitions(cfg.TablePrefix, model)
	stored = map[string][]map[string]types.AttributeValue{}
	for _, d := range defs {
		name := strings.TrimPrefix(aws.ToString(d.TableName), cfg.TablePrefix)
		stored[name] = scanAll(ctx, t, up, aws.ToString(d.TableName))
	}
	return writes, reads, stored
}

func scanAll(ctx context.Context, t *testing.T, c *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
	}
	return out
}

// where keeps the items whose attribute name is a number equal to v (or,
// for a string, starts with v).
func where(items []map[string]types.AttributeValue, name, v string) []map[string]types.AttributeValue {
	var out []map[string]types.AttributeValue
	for _, it := range items {
		switch a := it[name].(type) {
		case *types.AttributeValueMemberN:
			if a.Value == v {
				out = append(out, it)
			}
		case *types.AttributeValueMemberS:
			if strings.HasPrefix(a.Value, v) {
				out = append(out, it)
			}
		}
	}
	return out
}

func sumWCU(items []map[string]types.AttributeValue) float64 {
	u := 0.0
	for _, it := range items {
		u += wcu(awsSize(it))
	}
	return u
}

func compareUnits(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-9 {
			t.Errorf("%s %s = %v units; want %v by AWS's rules", what, k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && g != 0 {
			t.Errorf("%s %s = %v units; want none", what, k, g)
		}
	}
}

// The key attributes of the resort index's entries (KEYS_ONLY: the
// table's keys and the index's).
var resortIndexEntry = []string{"SkierID", "SortKey", "ResortID", "SeasonDaySkier"}

// skierReads is what each skier query of the adopted and sharded models
// reads: a consistent Query of the skier's partition, whose items here are
// all of one day, so every one of them reads the skier's ride items.
func skierReads(rides []map[string]types.AttributeValue) map[string]float64 {
	return map[string]float64{
		"SkierDayVertical":     rcu(true, rides...),
		"SkierSeasonVerticals": rcu(true, rides...),
		"SkierDays":            rcu(true, rides...),
		"SkierDayRides":        rcu(true, rides...),
	}
}

func TestAdoptedUnitsMatchAWSRules(t *testing.T) {
	t.Parallel()
	writes, reads, stored := unitsRun(t, dynamo.ModelAdopted)
	rides := stored["skierTable"]
	entries := project(rides, resortIndexEntry...)
	// Each ride put twice: the second an overwrite of the same item,
	// billed the same size on the table and nothing on the index (no
	// projected attribute changes).
	compareUnits(t, "write", writes, map[string]float64{
		"skierTable":              2 * sumWCU(rides),
		"skierTable/resort-index": sumWCU(entries),
	})
	want := skierReads(where(rides, "SkierID", "7"))
	want["UniqueSkiers"] = rcu(false, entries...) // an index: eventually consistent
	compareUnits(t, "read", reads, want)
}

func TestShardedUnitsMatchAWSRules(t *testing.T) {
	t.Parallel()
	writes, reads, stored := unitsRun(t, dynamo.ModelSharded)
	rides, markers := stored["skierTable"], stored["skierDayMarkerTable"]
	// Rides put twice (an overwrite the second time); each marker once
	// (the process remembers the markers it wrote).
	compareUnits(t, "write", writes, map[string]float64{
		"skierTable":          2 * sumWCU(rides),
		"skierDayMarkerTable": sumWCU(markers),
	})
	want := skierReads(where(rides, "SkierID", "7"))
	// One consistent Select COUNT per shard: billed on the markers it
	// counts, an empty shard the minimum.
	byShard := map[string][]map[string]types.AttributeValue{}
	for _, m := range markers {
		k := m["ResortDayShard"].(*types.AttributeValueMemberS).Value
		byShard[k] = append(byShard[k], m)
	}
	unique := float64(dynamo.MarkerShards-len(byShard)) * rcu(true)
	for _, ms := range byShard {
		unique += rcu(true, ms...)
	}
	want["UniqueSkiers"] = unique
	compareUnits(t, "read", reads, want)
}

// liftList and rideKeys are the attributes of a skier-day item that grow
// by one element a ride.
func liftList(it map[string]types.AttributeValue) []types.AttributeValue {
	return it["LiftList"].(*types.AttributeValueMemberL).Value
}

func rideKeys(it map[string]types.AttributeValue) []string {
	return it["RideKeys"].(*types.AttributeValueMemberSS).Value
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }

func verticalOf(rides []domain.LiftRide) int {
	v := 0
	for _, r := range rides {
		v += r.Vertical()
	}
	return v
}

func TestAbandonedUnitsMatchAWSRules(t *testing.T) {
	t.Parallel()
	writes, reads, stored := unitsRun(t, dynamo.ModelAbandoned)
	days := stored["skierTable"] // one item per skier-day
	skier7, skier8 := unitsWorkload(t)
	table := 0.0
	for _, rides := range [][]domain.LiftRide{skier7, skier8} {
		final := where(days, "SkierID", fmt.Sprint(rides[0].SkierID()))[0]
		// The item after the first k rides: the first k list elements and
		// ride keys, their vertical.
		image := func(k int) map[string]types.AttributeValue {
			return withAttrs(final, map[string]types.AttributeValue{
				"LiftList":      &types.AttributeValueMemberL{Value: liftList(final)[:k]},
				"RideKeys":      &types.AttributeValueMemberSS{Value: rideKeys(final)[:k]},
				"TotalVertical": num(verticalOf(rides[:k])),
			})
		}
		// First delivery: one update a ride, billed the larger of the item
		// before and after (the first creates it).
		table += wcu(awsSize(image(1)))
		for k := 2; k <= len(rides); k++ {
			table += math.Max(wcu(awsSize(image(k-1))), wcu(awsSize(image(k))))
		}
		// Redelivery: every update refused by its condition, billed the
		// item as it is.
		table += float64(len(rides)) * wcu(awsSize(final))
	}
	// The index entry is put when the item is created; later updates set
	// its keys to the values they have: no index write.
	compareUnits(t, "write", writes, map[string]float64{
		"skierTable":              table,
		"skierTable/resort-index": sumWCU(project(days, resortIndexEntry...)),
	})
	day7 := where(days, "SkierID", "7")
	// Every skier query reads the one day item (SkierDayVertical by
	// GetItem: the whole item, whatever it projects).
	want := skierReads(day7)
	want["UniqueSkiers"] = rcu(false, project(days, resortIndexEntry...)...)
	compareUnits(t, "read", reads, want)
}

func TestCountersUnitsMatchAWSRules(t *testing.T) {
	t.Parallel()
	writes, reads, stored := unitsRun(t, dynamo.ModelCounters)
	items := stored["skierTable"]
	rides, days := where(items, "SortKey", "R#"), where(items, "SortKey", "D#")
	shards := stored["resortDayTable"]
	skier7, skier8 := unitsWorkload(t)
	const group = 25           // rides one skier-day update adds
	table := 2 * sumWCU(rides) // ride items put twice
	for _, rs := range [][]domain.LiftRide{skier7, skier8} {
		final := where(days, "SkierID", fmt.Sprint(rs[0].SkierID()))[0]
		image := func(k int) map[string]types.AttributeValue {
			return withAttrs(final, map[string]types.AttributeValue{
				"RideKeys":      &types.AttributeValueMemberSS{Value: rideKeys(final)[:k]},
				"TotalVertical": num(verticalOf(rs[:k])),
			})
		}
		// First delivery: an update per group of 25, the larger image.
		// Redelivery: each group's update is refused, then each of its
		// rides' alone (a group of one is not retried), all billed the
		// item as it is.
		for start := 0; start < len(rs); start += group {
			end := min(start+group, len(rs))
			if start == 0 {
				table += wcu(awsSize(image(end)))
			} else {
				table += math.Max(wcu(awsSize(image(start))), wcu(awsSize(image(end))))
			}
			refused := 1
			if end-start > 1 {
				refused += end - start
			}
			table += float64(refused) * wcu(awsSize(final))
		}
	}
	// Skiers 7 and 8 are on shards of their own: each created once, and
	// refused once on the redelivery (a shard's update of one skier is
	// not retried).
	compareUnits(t, "write", writes, map[string]float64{
		"skierTable":     table,
		"resortDayTable": 2 * sumWCU(shards),
	})
	day7 := where(days, "SkierID", "7")
	compareUnits(t, "read", reads, map[string]float64{
		"UniqueSkiers":         rcu(true, shards...),
		"SkierDayVertical":     rcu(true, day7...),
		"SkierSeasonVerticals": rcu(true, day7...),
		"SkierDays":            rcu(true, day7...),
		"SkierDayRides":        rcu(true, where(rides, "SkierID", "7")...),
	})
}
