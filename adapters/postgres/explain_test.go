package postgres

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestQueriesUseIndexesNotSeqScan plans each read query on a loaded,
// analysed rides table and checks that an index serves it. Sequential scans
// are switched off for the check: the planner then still picks one when no
// index can serve the query, so the assertion does not depend on row counts
// or sampled statistics. The plans are logged (go test -v) and copied into
// docs/postgres.md.
func TestQueriesUseIndexesNotSeqScan(t *testing.T) {
	db := openTestDB(t, Config{MaxConns: 2})
	ctx := testCtx(t, time.Minute)
	rides := loadRides(5, 20_000, 0)
	for i := 0; i < len(rides); i += 1000 {
		if err := db.Rides().AddRides(ctx, rides[i:min(i+1000, len(rides))]); err != nil {
			t.Fatal(err)
		}
	}
	// VACUUM sets the visibility map, as autovacuum would on a live
	// table, so the plans show the index-only scans the indexes allow.
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE rides`); err != nil {
		t.Fatal(err)
	}
	r := rides[0]
	season, day := seasonColumn(r.SeasonID()), int16(r.DayID().Number())
	queries := []struct {
		name, sql string
		indexes   []string // any of them will do: the planner picks by cost
		args      []any
	}{
		{"UniqueSkiers", queryUniqueSkiers, []string{"rides_resort_day"}, []any{r.ResortID(), season, day}},
		{"SkierDayVertical", querySkierDayVertical, []string{"rides_identity"}, []any{r.SkierID(), season, day, r.ResortID()}},
		{"SkierSeasonVerticals", querySkierSeasonVerticals, []string{"rides_identity"}, []any{r.SkierID(), []int32{int32(r.ResortID()), int32(r.ResortID()) + 1}}},
		{"SkierDays", querySkierDays, []string{"rides_identity"}, []any{r.SkierID(), season}},
		{"SkierDayRides", querySkierDayRides, []string{"rides_identity"}, []any{r.SkierID(), season, day}},
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		rows, err := tx.Query(ctx, "EXPLAIN "+q.sql, q.args...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.name, err)
		}
		plan := strings.Join(lines, "\n")
		t.Logf("%s:%s\n%s", q.name, q.sql, plan)
		if strings.Contains(plan, "Seq Scan on rides") {
			t.Errorf("%s scans the rides table sequentially:\n%s", q.name, plan)
		}
		if !slices.ContainsFunc(q.indexes, func(index string) bool { return strings.Contains(plan, index) }) {
			t.Errorf("%s uses none of the indexes %v:\n%s", q.name, q.indexes, plan)
		}
	}
}

// TestARideWritesTheTableAndTwoIndexes lists the indexes of the rides
// table once every migration has run: the primary key and the resort-day
// index, each written with every ride, and no other (a third cost the
// server about a fifth of its CPU a ride; the queries above run on these
// two).
func TestARideWritesTheTableAndTwoIndexes(t *testing.T) {
	db := openTestDB(t, Config{MaxConns: 1})
	ctx := testCtx(t, 30*time.Second)
	rows, err := db.pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'rides' ORDER BY indexname`, db.schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rides_identity", "rides_resort_day"}; !slices.Equal(names, want) {
		t.Errorf("indexes on rides = %v; want %v", names, want)
	}
}
