#!/usr/bin/env bash
# Exports the database's own records for the chaos checker as CSV files, and
# answers the harness's quiescence question. Read-only.
#   export-history.sh export URL OUTDIR
#   export-history.sh pending URL WINDOW_END_UNIX_US   -> count of unfinished runs created before the window end
#   export-history.sh activity URL FILE                  -> pg_stat_activity of the database, as CSV
set -euo pipefail
mode=$1; url=$2
q() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$url" -c "$1"; }
case "$mode" in
pending)
  q "SELECT count(*) FROM job_runs WHERE state NOT IN ('SUCCEEDED','FAILED','TIMED_OUT','CANCELED')
     AND created_at <= to_timestamp($3 / 1e6)"
  ;;
activity)
  # Who is connected and what they wait for (written when a run is not quiescent).
  q "\\copy (SELECT pid, application_name, state, coalesce(wait_event_type, ''), coalesce(wait_event, ''),
      xact_start, left(query, 200) FROM pg_stat_activity WHERE datname = current_database()) TO '$3' CSV"
  ;;
export)
  out=$3; mkdir -p "$out"
  q "\\copy (SELECT r.id, coalesce(j.name, ''), r.state, r.attempt, coalesce(r.idempotency_key, ''),
      coalesce(floor(extract(epoch FROM r.scheduled_for))::bigint, 0), floor(extract(epoch FROM r.created_at) * 1e6)::bigint
      FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id ORDER BY r.id) TO '$out/runs.csv' CSV"
  q "\\copy (SELECT run_id, coalesce(from_state, ''), to_state, leader_epoch,
      floor(extract(epoch FROM pg_xact_commit_timestamp((xid % 4294967296)::text::xid)) * 1e6)::bigint
      FROM job_run_transitions ORDER BY id) TO '$out/transitions.csv' CSV"
  q "\\copy (SELECT epoch, leader_id, leader_incarnation,
      floor(extract(epoch FROM pg_xact_commit_timestamp((election_xid % 4294967296)::text::xid)) * 1e6)::bigint
      FROM epoch_history ORDER BY epoch) TO '$out/epochs.csv' CSV"
  q "\\copy (SELECT run_id, attempt, coalesce(worker_id, ''), outcome, leader_epoch FROM job_run_attempts ORDER BY id) TO '$out/attempts.csv' CSV"
  q "\\copy (SELECT id, at, actor, action, coalesce(subject, ''), coalesce(epoch, 0) FROM audit_log ORDER BY id) TO '$out/audit_log.csv' CSV"
  ;;
*) echo "usage: $0 export URL OUTDIR | pending URL WINDOW_END_US" >&2; exit 2 ;;
esac
