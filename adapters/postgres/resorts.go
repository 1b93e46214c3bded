package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// ResortStore keeps the reference data in the resorts and resort_seasons
// tables.
type ResortStore struct {
	pool *pgxpool.Pool
}

var _ ports.ResortStore = (*ResortStore)(nil)

// Resorts implements ports.ResortStore.
func (s *ResortStore) Resorts(ctx context.Context) ([]domain.Resort, error) {
	rows, err := s.pool.Query(ctx, `
SELECT r.id, r.name,
       coalesce(array_agg(s.season_id ORDER BY s.season_id) FILTER (WHERE s.season_id IS NOT NULL), '{}')
FROM resorts r LEFT JOIN resort_seasons s ON s.resort_id = r.id
GROUP BY r.id ORDER BY r.id`)
	if err == nil {
		var out []domain.Resort
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Resort, error) {
			var r domain.Resort
			var seasons []int16
			if err := row.Scan(&r.ID, &r.Name, &seasons); err != nil {
				return r, err
			}
			for _, n := range seasons {
				season, err := readSeason(n)
				if err != nil {
					return r, err
				}
				r.Seasons = append(r.Seasons, season)
			}
			return r, nil
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, classify(ctx, "postgres: list resorts", err)
}

// PutResort implements ports.ResortStore.
func (s *ResortStore) PutResort(ctx context.Context, r domain.Resort) error {
	seasons := make([]int16, len(r.Seasons))
	for i, season := range r.Seasons {
		seasons[i] = seasonColumn(season)
	}
	// One transaction so that a resort never shows without the seasons it
	// was put with.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO resorts (id, name) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET name = excluded.name`, r.ID, r.Name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO resort_seasons (resort_id, season_id)
SELECT $1, unnest($2::smallint[])
ON CONFLICT DO NOTHING`, r.ID, seasons)
		return err
	})
	return classify(ctx, fmt.Sprintf("postgres: put resort %d", r.ID), err)
}

// AddSeason implements ports.ResortStore.
func (s *ResortStore) AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO resort_seasons (resort_id, season_id) VALUES ($1, $2)
ON CONFLICT DO NOTHING`, resortID, seasonColumn(season))
	// The foreign key is what tells an unknown resort apart from a season
	// already registered (both insert nothing).
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return domain.NotFound("resort %d does not exist", resortID)
	}
	return classify(ctx, fmt.Sprintf("postgres: add season %s to resort %d", season, resortID), err)
}
