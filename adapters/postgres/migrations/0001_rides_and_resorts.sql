-- Reference data: a ride is accepted only for a registered (resort, season).
CREATE TABLE resorts (
    id   integer PRIMARY KEY CHECK (id > 0),
    name text    NOT NULL
);

CREATE TABLE resort_seasons (
    resort_id integer  NOT NULL REFERENCES resorts (id) ON DELETE CASCADE,
    season_id smallint NOT NULL CHECK (season_id BETWEEN 1000 AND 9999),
    PRIMARY KEY (resort_id, season_id)
);

-- One row per ride. The six columns together are the ride's identity
-- (domain.LiftRide), so the primary key is what makes writes idempotent.
-- No foreign key to resorts: the ingest path has already checked the
-- resort and season, and a per-row check would only slow the batch writes.
-- Seasons are four-digit years and days 1..366, so smallint keeps the rows
-- (and every index) narrow: 20 bytes of data per ride.
CREATE TABLE rides (
    resort_id integer  NOT NULL,
    season_id smallint NOT NULL,
    day_id    smallint NOT NULL,
    skier_id  integer  NOT NULL,
    ride_time integer  NOT NULL,
    lift_id   integer  NOT NULL,
    -- Column order chosen so this one index also serves the per-skier
    -- queries: days skied (skier, season), the day's rides in
    -- (time, resort, lift) order, and the skier's day vertical.
    CONSTRAINT rides_identity PRIMARY KEY (skier_id, season_id, day_id, ride_time, resort_id, lift_id)
);

-- Unique skiers per resort and day: an index-only scan over one day.
CREATE INDEX rides_resort_day ON rides (resort_id, season_id, day_id, skier_id);

-- A skier's season totals at one resort: an index-only scan, already
-- grouped by season, with lift_id carried along for the vertical.
CREATE INDEX rides_skier_resort ON rides (skier_id, resort_id, season_id) INCLUDE (lift_id);
