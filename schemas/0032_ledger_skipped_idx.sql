-- The slots each scheduled job gave up (baton_cron_slots_skipped{job}, read
-- at every /metrics scrape) are summed over the ledger's `skipped` entries
-- only. Without an index that sum read the whole ledger, whose held_back and
-- no_worker_matches entries can number one per run: 266 ms per scrape with
-- 500,000 entries, 1.6 ms with this partial index (it holds the skipped
-- entries alone, so the ledger's other inserts do not touch it).
CREATE INDEX decision_ledger_skipped_idx ON decision_ledger (job_definition_id) WHERE decision = 'skipped';
