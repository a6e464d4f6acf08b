-- `baton verify --receipts` (baton_receipt_problems, schemas/0042) with a
-- plan that does not depend on fresh statistics, and without JIT.
--
-- Its anti-joins (each end since receipts began against the receipts'
-- entries) were planned as nested loops whenever the statistics said the
-- run table had few finished runs and the entries were few: after a burst
-- of 40,000 runs, before autovacuum analyzed the table, the pass compared
-- every run with every entry, 140 s instead of 0.3 s (docs/performance.md,
-- "Receipts measured apart"). Without nested-loop joins the planner hashes
-- them; the lookups of each end's row (scalar subqueries) and the
-- per-epoch jsonb_each and per-link unnest (lateral calls, which only a
-- nested loop can run) are not joins it can choose for, and are kept.
--
-- Those unavoidable nested loops then carry the planner's penalty for a
-- disabled method, so the plan's cost is in the billions and PostgreSQL
-- compiled the whole query with JIT, inlined and optimized: 390 functions,
-- 3.45 s of a 3.8 s pass. A pass that runs once a check gains nothing from
-- compiling its expressions.
ALTER FUNCTION baton_receipt_problems(int) SET enable_nestloop = off;
ALTER FUNCTION baton_receipt_problems(int) SET jit = off;
