-- What baton_stale_runs (0031) tells an operator, where a psql user reads
-- it (\d+ baton_stale_runs). Nothing else changes: stale_after is now
-- written from each worker's own heartbeat cadence, the stretched one of a
-- large fleet included (docs/fencing.md, "Staleness").
COMMENT ON VIEW baton_stale_runs IS
  'RUNNING runs for which no heartbeat has been recorded for twice their worker''s own heartbeat timeout '
  '(the one its welcome gave it, stretched for a large fleet). An operator''s signal: the leader decides nothing '
  'by it. During a leaderless gap (no leader elected, or the elected one cannot write) nobody records '
  'heartbeats, so every RUNNING run shows here until a leader writes again.';
