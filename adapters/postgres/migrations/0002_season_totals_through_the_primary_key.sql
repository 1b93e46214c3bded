-- A skier's season totals read the skier's entries of the primary key
-- (skier_id leads it and it holds every column: an index-only scan over
-- the skier's rides, filtered by resort and grouped). A third index would
-- be written with every ride to serve only these reads; rides are written
-- far more often than totals are read, and the totals of a skier's whole
-- history are a few thousand entries at most, so it goes (docs/postgres.md
-- has what it cost and what the reads take without it).
DROP INDEX IF EXISTS rides_skier_resort;
