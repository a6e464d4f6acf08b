#!/usr/bin/env bash
# Exports the database's own records for the chaos checker as JSON lines, and
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
  # JSON lines, one object per row (psql unaligned tuples: no COPY escaping);
  # a missing commit timestamp stays null, which the checker fails.
  out=$3; mkdir -p "$out"
  j() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$url" -o "$out/$1" -c "$2"; }
  cts="floor(extract(epoch FROM pg_xact_commit_timestamp((%s %% 4294967296)::text::xid)) * 1e6)::bigint"
  j runs.jsonl "SELECT json_build_object('id', r.id, 'job', j.name, 'state', r.state, 'attempt', r.attempt,
      'max_attempts', r.max_attempts, 'key', r.idempotency_key,
      'slot', floor(extract(epoch FROM r.scheduled_for))::bigint, 'created_us', floor(extract(epoch FROM r.created_at) * 1e6)::bigint,
      'error_code', r.error_code, 'event_id', r.event_id, 'concurrency_key', r.concurrency_key)
      FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id ORDER BY r.id"
  j transitions.jsonl "SELECT json_build_object('id', id, 'run', run_id, 'from', from_state, 'to', to_state,
      'from_version', from_version, 'to_version', to_version, 'attempt', attempt, 'epoch', leader_epoch,
      'continuation', continuation_state, 'continuation_ms', continuation_timeout_ms,
      'commit_us', $(printf "$cts" xid))
      FROM job_run_transitions ORDER BY run_id, to_version"
  j epochs.jsonl "SELECT json_build_object('epoch', epoch, 'node', leader_id, 'incarnation', leader_incarnation,
      'commit_us', $(printf "$cts" election_xid), 'end_reason', end_reason)
      FROM epoch_history ORDER BY epoch"
  j attempts.jsonl "SELECT json_build_object('run', run_id, 'attempt', attempt, 'worker', worker_id, 'outcome', outcome,
      'exit_code', exit_code, 'token', lease_token::text, 'epoch', leader_epoch)
      FROM job_run_attempts ORDER BY run_id, attempt"
  j dead_letters.jsonl "SELECT json_build_object('run', run_id, 'final_state', final_state, 'attempts', attempts,
      'error_code', error_code) FROM dead_letters ORDER BY id"
  j jobs.jsonl "SELECT json_build_object('name', name, 'max_instances', max_instances,
      'concurrency_policy', concurrency_policy, 'exclusive_execution', exclusive_execution,
      'mutually_exclusive', mutually_exclusive, 'on_events', on_events, 'concurrency_limit', concurrency_limit)
      FROM job_definitions ORDER BY id"
  j events.jsonl "SELECT json_build_object('id', id, 'kind', kind, 'dedupe_key', dedupe_key,
      'processed', processed_at IS NOT NULL) FROM events ORDER BY id"
  j ledger.jsonl "SELECT json_build_object('job', j.name, 'decision', d.decision, 'reason', d.reason,
      'slot', floor(extract(epoch FROM d.slot))::bigint, 'slot_last', floor(extract(epoch FROM d.slot_last))::bigint,
      'run', d.run_id, 'epoch', d.epoch)
      FROM decision_ledger d LEFT JOIN job_definitions j ON j.id = d.job_definition_id
      WHERE d.slot IS NOT NULL ORDER BY d.id"
  # The production checker's sweep during the run (docs/assurance.md).
  j invariant_violations.jsonl "SELECT json_build_object('id', id, 'invariant', invariant, 'evidence', evidence,
      'run_ids', run_ids, 'found_by', found_by, 'epoch', epoch) FROM invariant_violations ORDER BY id"
  j verify_cursor.jsonl "SELECT json_build_object('runs_checked', runs_checked, 'sweeps', sweeps, 'node', node_id,
      'epoch', epoch) FROM verify_cursor"
  j audit_log.jsonl "SELECT json_build_object('id', id, 'at', at, 'actor', actor, 'action', action, 'subject', subject,
      'epoch', epoch) FROM audit_log ORDER BY id"
  ;;
*) echo "usage: $0 export URL OUTDIR | pending URL WINDOW_END_US" >&2; exit 2 ;;
esac
