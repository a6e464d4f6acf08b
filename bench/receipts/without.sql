-- The receipts' write cost (docs/performance.md, "Receipts"): what a finish
-- statement's receipt adds to the database, measured apart from the rest of
-- the statement. Each transaction takes :n ended runs of the throughput
-- phase, as the finish lane's batch returns them (w, materialized), and
-- makes one small write so that both scripts commit alike. with.sql does
-- the same and adds the receipt, the CTEs of store/pg/run_transitions.cpp
-- (receipt_ctes, run_ends) as they are there; the difference in the
-- database's CPU per end is the receipts' cost.
\set a random(:lo, :hi - :n + 1)
WITH w AS MATERIALIZED (SELECT * FROM job_runs WHERE id BETWEEN :a::bigint AND :a::bigint + :n::int - 1)
UPDATE bench_receipt_scratch SET ends = ends + (SELECT count(*) FROM w) WHERE id = :client_id::int;
