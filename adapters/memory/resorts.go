package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// ResortStore keeps the reference data in a map.
type ResortStore struct {
	mu      sync.Mutex
	resorts map[domain.ResortID]domain.Resort
}

var _ ports.ResortStore = (*ResortStore)(nil)

// NewResortStore returns an empty resort store.
func NewResortStore() *ResortStore {
	return &ResortStore{resorts: map[domain.ResortID]domain.Resort{}}
}

// Resorts implements ports.ResortStore.
func (s *ResortStore) Resorts(context.Context) ([]domain.Resort, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]domain.Resort, 0, len(s.resorts))
	for _, r := range s.resorts {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b domain.Resort) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PutResort implements ports.ResortStore.
func (s *ResortStore) PutResort(_ context.Context, r domain.Resort) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	merged := s.resorts[r.ID]
	merged.ID, merged.Name = r.ID, r.Name
	for _, season := range r.Seasons {
		merged = merged.WithSeason(season)
	}
	s.resorts[r.ID] = merged
	return nil
}

// AddSeason implements ports.ResortStore.
func (s *ResortStore) AddSeason(_ context.Context, resortID domain.ResortID, seasonID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.resorts[resortID]
	if !ok {
		return domain.NotFound("resort %d does not exist", resortID)
	}
	s.resorts[resortID] = r.WithSeason(seasonID)
	return nil
}
