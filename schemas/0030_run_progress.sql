-- A running task's progress (SPEC 6: heartbeat progress; docs/scheduling.md,
-- "Progress"): what the task last reported on its standard output
-- (`::progress:: TEXT`), carried by its worker's heartbeats (protocol
-- version 5) and written with the heartbeat the leader records. Kept after
-- the run ends (the last progress reported). Neither column is indexed, so a
-- heartbeat that writes them stays a HOT update (SPEC section 2).
ALTER TABLE job_runs ADD COLUMN progress text CHECK (length(progress) <= 1024),
                     ADD COLUMN progress_at timestamptz;
