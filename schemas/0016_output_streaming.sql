-- Streamed task output (docs/scheduling.md, "Output and the log archive"):
-- a row of run_logs written from an `output` frame holds the bytes
-- [start_offset, end_offset) of its stream, so a resent or overlapping chunk
-- adds nothing and a gap is visible. Rows without offsets are notes and the
-- tails of workers that do not stream.
ALTER TABLE run_logs ADD COLUMN start_offset BIGINT, ADD COLUMN end_offset BIGINT;
-- "How far does the log hold this stream?" at every batch of chunks.
CREATE INDEX run_logs_stream_end_idx ON run_logs (run_id, attempt, stream, end_offset)
  WHERE end_offset IS NOT NULL;
