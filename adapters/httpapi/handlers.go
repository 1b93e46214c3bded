package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Handlers implements StrictServerInterface on top of the core's services.
// A handler translates between API and domain types and nothing more (a
// season or day is parsed, and so checked, only here); the use cases check
// the ids against the domain's rules and the catalogue.
type Handlers struct {
	Ingest  ports.RideIngester
	Queries ports.RideQueries
	Resorts ports.Resorts
	Stats   ports.EndpointStats
	Health  ports.Health
	// ClientAddress, when set, names the client of each POSTed ride to
	// ingest (RemoteAddress, or ForwardedAddress behind a load balancer),
	// for its per-client rate limit; nil names none.
	ClientAddress func(*http.Request) string
	// Metrics, when set, is served at GET and HEAD /metrics beside the
	// API's routes (it is not in openapi.yaml, nor counted in /statistics).
	Metrics http.Handler
}

var _ StrictServerInterface = (*Handlers)(nil)

// WriteNewLiftRide validates the ride and hands it to the ingest service.
func (h *Handlers) WriteNewLiftRide(ctx context.Context, req WriteNewLiftRideRequestObject) (WriteNewLiftRideResponseObject, error) {
	season, day, err := seasonDay(req.SeasonID, req.DayID)
	if err != nil {
		return nil, err
	}
	if req.Body == nil || req.Body.Time == nil {
		return nil, domain.Invalid(`time is required: send a body like {"time":217,"liftID":21}`)
	}
	if req.Body.LiftID == nil {
		return nil, domain.Invalid(`liftID is required: send a body like {"time":217,"liftID":21}`)
	}
	ride, err := domain.NewLiftRide(domain.ResortID(req.ResortID), season, day, domain.SkierID(req.SkierID), *req.Body.Time, *req.Body.LiftID)
	if err != nil {
		return nil, err
	}
	if err := h.Ingest.AddRide(ctx, ride); err != nil {
		return nil, err
	}
	return WriteNewLiftRide201Response{}, nil
}

// GetSkierDayVertical answers with a bare integer.
func (h *Handlers) GetSkierDayVertical(ctx context.Context, req GetSkierDayVerticalRequestObject) (GetSkierDayVerticalResponseObject, error) {
	season, day, err := seasonDay(req.SeasonID, req.DayID)
	if err != nil {
		return nil, err
	}
	v, err := h.Queries.SkierDayVertical(ctx, domain.ResortID(req.ResortID), season, day, domain.SkierID(req.SkierID))
	if err != nil {
		return nil, err
	}
	return GetSkierDayVertical200JSONResponse(v), nil
}

// GetSkierResortTotals reads the repeated resort and season query parameters.
func (h *Handlers) GetSkierResortTotals(ctx context.Context, req GetSkierResortTotalsRequestObject) (GetSkierResortTotalsResponseObject, error) {
	if len(req.Params.Resort) == 0 {
		return nil, domain.Invalid("query parameter resort is required, e.g. ?resort=1")
	}
	resorts := make([]domain.ResortID, 0, len(req.Params.Resort))
	for _, s := range req.Params.Resort {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, domain.Invalid("resort must be a resort id (a positive integer), got %q", s)
		}
		resorts = append(resorts, domain.ResortID(id))
	}
	var seasons []domain.Season
	if req.Params.Season != nil {
		for _, s := range *req.Params.Season {
			season, err := domain.ParseSeason(s)
			if err != nil {
				return nil, err
			}
			seasons = append(seasons, season)
		}
	}
	totals, err := h.Queries.SkierResortTotals(ctx, domain.SkierID(req.SkierID), resorts, seasons)
	if err != nil {
		return nil, err
	}
	out := SkierVertical{Resorts: make([]SeasonVertical, len(totals))}
	for i, t := range totals {
		out.Resorts[i] = SeasonVertical{SeasonID: t.SeasonID.String(), TotalVert: t.TotalVert}
	}
	return GetSkierResortTotals200JSONResponse(out), nil
}

// GetSkierSeasonDays lists the days a skier skied in a season.
func (h *Handlers) GetSkierSeasonDays(ctx context.Context, req GetSkierSeasonDaysRequestObject) (GetSkierSeasonDaysResponseObject, error) {
	season, err := domain.ParseSeason(req.SeasonID)
	if err != nil {
		return nil, err
	}
	days, err := h.Queries.SkierSeasonDays(ctx, domain.SkierID(req.SkierID), season)
	if err != nil {
		return nil, err
	}
	out := SkierSeasonDays{SkierID: int32(days.SkierID), SeasonID: days.SeasonID.String(), DaysSkied: len(days.DayIDs), DayIDs: make([]string, len(days.DayIDs))}
	for i, d := range days.DayIDs {
		out.DayIDs[i] = d.String()
	}
	return GetSkierSeasonDays200JSONResponse(out), nil
}

// GetSkierDayRides lists a skier's rides of one day.
func (h *Handlers) GetSkierDayRides(ctx context.Context, req GetSkierDayRidesRequestObject) (GetSkierDayRidesResponseObject, error) {
	season, day, err := seasonDay(req.SeasonID, req.DayID)
	if err != nil {
		return nil, err
	}
	sd, err := h.Queries.SkierDay(ctx, domain.SkierID(req.SkierID), season, day)
	if err != nil {
		return nil, err
	}
	out := SkierDayRides{SkierID: int32(sd.SkierID), SeasonID: sd.SeasonID.String(), DayID: sd.DayID.String(), TotalVert: sd.TotalVert, Rides: make([]RideOfDay, len(sd.Rides))}
	for i, r := range sd.Rides {
		out.Rides[i] = RideOfDay{Time: r.Time(), LiftID: r.LiftID(), ResortID: int32(r.ResortID()), Vertical: r.Vertical()}
	}
	return GetSkierDayRides200JSONResponse(out), nil
}

// GetResorts lists the resorts.
func (h *Handlers) GetResorts(ctx context.Context, _ GetResortsRequestObject) (GetResortsResponseObject, error) {
	rs, err := h.Resorts.List(ctx)
	if err != nil {
		return nil, err
	}
	out := ResortsList{Resorts: make([]ResortEntry, len(rs))}
	for i, r := range rs {
		out.Resorts[i] = ResortEntry{ResortID: int32(r.ID), ResortName: r.Name}
	}
	return GetResorts200JSONResponse(out), nil
}

// GetResortSeasons lists a resort's seasons.
func (h *Handlers) GetResortSeasons(ctx context.Context, req GetResortSeasonsRequestObject) (GetResortSeasonsResponseObject, error) {
	seasons, err := h.Resorts.Seasons(ctx, domain.ResortID(req.ResortID))
	if err != nil {
		return nil, err
	}
	out := SeasonsList{Seasons: make([]string, len(seasons))}
	for i, s := range seasons {
		out.Seasons[i] = s.String()
	}
	return GetResortSeasons200JSONResponse(out), nil
}

// AddSeason registers a season for a resort.
func (h *Handlers) AddSeason(ctx context.Context, req AddSeasonRequestObject) (AddSeasonResponseObject, error) {
	if req.Body == nil || req.Body.Year == nil {
		return nil, domain.Invalid(`year is required: send a body like {"year":"2026"}`)
	}
	season, err := domain.ParseSeason(*req.Body.Year)
	if err != nil {
		return nil, err
	}
	if err := h.Resorts.AddSeason(ctx, domain.ResortID(req.ResortID), season); err != nil {
		return nil, err
	}
	return AddSeason201Response{}, nil
}

// GetResortSkiersDay counts a resort's unique skiers on a day.
func (h *Handlers) GetResortSkiersDay(ctx context.Context, req GetResortSkiersDayRequestObject) (GetResortSkiersDayResponseObject, error) {
	season, err := domain.NewSeason(int(req.SeasonID))
	if err != nil {
		return nil, err
	}
	day, err := domain.NewDay(int(req.DayID))
	if err != nil {
		return nil, err
	}
	n, err := h.Queries.ResortDaySkiers(ctx, domain.ResortID(req.ResortID), season, day)
	if err != nil {
		return nil, err
	}
	return GetResortSkiersDay200JSONResponse(ResortSkiers{Time: n.ResortName, NumSkiers: int32(n.NumSkiers)}), nil
}

// seasonDay parses a route's season and day; a request wrong in both is
// told about its day.
func seasonDay(season, day string) (domain.Season, domain.Day, error) {
	d, err := domain.ParseDay(day)
	if err != nil {
		return domain.Season{}, domain.Day{}, err
	}
	s, err := domain.ParseSeason(season)
	return s, d, err
}

// GetPerformanceStats reports mean and max latency per route and method, in
// whole milliseconds as the course's clients expect.
func (h *Handlers) GetPerformanceStats(context.Context, GetPerformanceStatsRequestObject) (GetPerformanceStatsResponseObject, error) {
	snap := h.Stats.Snapshot()
	out := APIStats{EndpointStats: make([]EndpointStat, len(snap))}
	for i, s := range snap {
		out.EndpointStats[i] = EndpointStat{URL: s.URL, Operation: s.Operation, Mean: int32(s.Mean.Round(time.Millisecond).Milliseconds()), Max: int32(s.Max.Round(time.Millisecond).Milliseconds())}
	}
	return GetPerformanceStats200JSONResponse(out), nil
}

// GetHealthz says the process is alive; it checks nothing else on purpose.
func (h *Handlers) GetHealthz(context.Context, GetHealthzRequestObject) (GetHealthzResponseObject, error) {
	return GetHealthz200JSONResponse(Health{Status: "ok"}), nil
}

// GetReadyz reports every dependency and the queue depth.
func (h *Handlers) GetReadyz(ctx context.Context, _ GetReadyzRequestObject) (GetReadyzResponseObject, error) {
	r := h.Health.Ready(ctx)
	body := Readiness{Status: "ok", QueueDepth: r.QueueDepth, Checks: r.Checks}
	if body.Checks == nil {
		body.Checks = map[string]string{}
	}
	if !r.Ready {
		body.Status = "unavailable"
		return GetReadyz503JSONResponse(body), nil
	}
	if r.Degraded {
		body.Status = "degraded" // still serving: ready, so still in the load balancer
	}
	return GetReadyz200JSONResponse(body), nil
}
