// The statements that make runs from triggers: the API's single trigger and
// its batch, and the judgement of an idempotency key that both, and the
// leader's SQL submissions, share (run_transitions_sql.h).
#include <pqxx/pqxx>

#include "baton/store/admin_store.h"
#include "due_run_row.h"
#include "run_transitions_sql.h"

namespace baton::store::pg {

namespace {
std::string named_by_key(const std::string& key, const std::string& job) {
  return " FROM job_runs k WHERE " + key + " IS NOT NULL AND k.idempotency_key = " + key +
         " AND k.job_definition_id = " + job + " AND (k.finished_at IS NULL OR k.finished_at > now() - interval '" +
         idempotency_key_remembered + "') ORDER BY k.id DESC LIMIT 1";
}
}  // namespace

std::string run_named_by_key(const std::string& key, const std::string& job) {
  return "(SELECT k.id" + named_by_key(key, job) + ")";
}

std::string key_refusal(const std::string& key, const std::string& job, const std::string& owner,
                        const std::string& payload) {
  // A run submitted before schemas/0048 has no owner: its key is anyone's,
  // as it was. The other caller's run is not named.
  return "(SELECT CASE WHEN k.idempotency_owner IS NOT NULL AND k.idempotency_owner IS DISTINCT FROM " + owner +
         " THEN '" + std::string(store::key_refusal_prefix) +
         "' || quote_literal(left(k.idempotency_key, 200)) || ' is taken by another caller for this job'"
         " WHEN k.payload IS DISTINCT FROM " +
         payload + " THEN '" + std::string(store::key_refusal_prefix) +
         "' || quote_literal(left(k.idempotency_key, 200)) || ' names run ' || k.id ||"
         " ', submitted with other parameters (a key names one request)' END" +
         named_by_key(key, job) + ")";
}

std::string parameter_names(const std::string& payload) {
  return "(SELECT coalesce(jsonb_agg(n ORDER BY n), '[]'::jsonb) FROM jsonb_object_keys(coalesce(" + payload +
         " -> 'parameters', '{}'::jsonb)) AS n)";
}

const std::string& trigger_run_sql() {
  // One autocommit statement: the fenced insert, its audit entry, and the
  // new run as the dispatcher would read it (due_run_columns), so that the
  // leader can assign it at once instead of reading it back. The row comes
  // back only when the run may be assigned now: due, and of a job without an
  // instance limit, mutual exclusion or exclusive execution (those wait for
  // the dispatcher's read, which counts the holders).
  //
  // An Idempotency-Key names one submission: while its run is unfinished
  // (the unique index, which concurrent submissions meet) and for
  // `idempotency_key_remembered` after it finished (`earlier`), the key
  // gives back that run instead of a new one (schemas/0025). The row's
  // fourth column is that run's id.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " job AS (SELECT * FROM job_definitions WHERE name = $2 AND deleted_at IS NULL),"
      // The job's parameter declarations judge the trigger's parameters
      // here, in the statement that inserts (schemas/0027): refused, no run.
      " refusal AS (SELECT coalesce(baton_parameters_refused(job.parameter_rules, $6::jsonb -> 'parameters',"
      " $8::boolean), baton_trigger_options_refused(job.priority, job.timeout_ms, $10::int, $11::bigint))"
      " AS why FROM job),"
      // The key's run, when this caller may have it (schemas/0048).
      " key_refused AS (SELECT " +
      key_refusal("$3::text", "(SELECT id FROM job)", "$7::text", "coalesce($6::jsonb, '{}'::jsonb)") +
      " AS why),"
      " earlier AS (SELECT " +
      run_named_by_key("$3::text", "(SELECT id FROM job)") +
      " AS id WHERE (SELECT why FROM key_refused) IS NULL),"
      // $9: run_at, unix seconds (a one-off: it may not start before then);
      // $10, $11: the run's own priority and timeout
      " w AS (INSERT INTO job_runs (job_definition_id, idempotency_key, max_attempts, priority, trigger_kind,"
      " leader_epoch, scheduled_for, payload, start_after, timeout_ms, idempotency_owner)"
      " SELECT job.id, $3::text, job.max_attempts, coalesce($10::int, job.priority), $4::text, $1::bigint,"
      " to_timestamp($5::bigint), coalesce($6::jsonb, '{}'::jsonb), to_timestamp($9::bigint), $11::bigint,"
      " CASE WHEN $3::text IS NOT NULL THEN $7::text END"
      " FROM job WHERE (SELECT epoch FROM fence) = $1::bigint AND (SELECT id FROM earlier) IS NULL"
      " AND (SELECT why FROM refusal) IS NULL AND (SELECT why FROM key_refused) IS NULL"
      " ON CONFLICT DO NOTHING RETURNING *),"
      // The parameters' names, not their values: a value may be a secret.
      " audit AS (INSERT INTO audit_log (actor, action, subject, epoch, details)"
      " SELECT $7::text, 'job.trigger', 'job:' || $2, $1::bigint, jsonb_build_object('run_id', w.id,"
      " 'idempotency_key', $3::text, 'run_at', to_timestamp($9::bigint), 'parameters', " +
      parameter_names("$6::jsonb") +
      ") FROM w)"
      " SELECT (SELECT epoch FROM fence), (SELECT id FROM w), EXISTS (SELECT 1 FROM job), (SELECT id FROM earlier),"
      " (SELECT why FROM refusal), (SELECT why FROM key_refused), due.*"
      " FROM (VALUES (1)) AS one(x) LEFT JOIN (SELECT " +
      due_run_columns() +
      " FROM w r JOIN job_definitions j ON j.id = r.job_definition_id"
      " WHERE coalesce(r.scheduled_for, r.created_at) <= now() AND (r.start_after IS NULL OR r.start_after <= now())"
      " AND baton_instance_limit(j) IS NULL AND NOT j.mutually_exclusive"
      // a keyed or rate-limited job's runs wait for the dispatcher's read,
      // which reads what their key and permits hold
      " AND j.concurrency_limit IS NULL AND j.rate_limit_runs IS NULL"
      // while some job is exclusive, every run waits for the dispatcher's
      // read, which holds them back while an exclusive run is active or due
      " AND NOT EXISTS (SELECT 1 FROM job_definitions g WHERE g.exclusive_execution AND g.deleted_at IS NULL))"
      " AS due ON true";
  return sql;
}

const std::string& trigger_batch_sql() {
  // The items as arrays, one element each ($2..$7), numbered. Each is
  // judged as trigger_run_sql judges one; a run's id is drawn before the
  // insert, so that each item finds its run whatever order the insert
  // returns them in. Nothing is inserted unless every item is acceptable
  // and the epoch is current; an item whose key names a run (earlier, or
  // an item before it in this batch) gives that run.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " items AS (SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::bigint[])"
      "  WITH ORDINALITY AS i(job, key, payload, run_at, priority, timeout_ms, n)),"
      " judged AS (SELECT i.*, j.id AS job_id, j.max_attempts, j.priority AS job_priority,"
      "  CASE WHEN j.id IS NULL THEN 'unknown job ' || quote_literal(left(i.job, 200))"
      "  ELSE coalesce(baton_parameters_refused(j.parameter_rules, i.payload::jsonb -> 'parameters', $9::boolean),"
      "  baton_trigger_options_refused(j.priority, j.timeout_ms, i.priority, i.timeout_ms), " +
      key_refusal("i.key", "j.id", "$8::text", "coalesce(i.payload::jsonb, '{}'::jsonb)") +
      ") END AS why,"
      "  " +
      run_named_by_key("i.key", "j.id") +
      " AS earlier,"
      "  nextval(pg_get_serial_sequence('job_runs', 'id')) AS new_id"
      "  FROM items i LEFT JOIN job_definitions j ON j.name = i.job AND j.deleted_at IS NULL),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint"
      "  AND NOT EXISTS (SELECT 1 FROM judged WHERE why IS NOT NULL)),"
      " w AS (INSERT INTO job_runs (id, job_definition_id, idempotency_key, max_attempts, priority, trigger_kind,"
      "  leader_epoch, payload, start_after, timeout_ms, idempotency_owner)"
      "  SELECT g.new_id, g.job_id, g.key, g.max_attempts, coalesce(g.priority, g.job_priority), 'api', $1::bigint,"
      "  coalesce(g.payload::jsonb, '{}'::jsonb), to_timestamp(g.run_at), g.timeout_ms,"
      "  CASE WHEN g.key IS NOT NULL THEN $8::text END FROM judged g, ok"
      "  WHERE g.earlier IS NULL ORDER BY g.n ON CONFLICT DO NOTHING RETURNING id),"
      // The parameters' names, not their values (as trigger_run_sql).
      " audit AS (INSERT INTO audit_log (actor, action, subject, epoch, details)"
      "  SELECT $8::text, 'job.trigger', 'job:' || g.job, $1::bigint, jsonb_build_object('run_id', w.id,"
      "  'idempotency_key', g.key, 'run_at', to_timestamp(g.run_at), 'batch', true, 'parameters', " +
      parameter_names("g.payload::jsonb") +
      ") FROM w JOIN judged g ON g.new_id = w.id RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), g.n, w.id, CASE WHEN w.id IS NULL AND EXISTS (SELECT 1 FROM ok) THEN"
      "  coalesce(g.earlier, (SELECT w2.id FROM w w2 JOIN judged g2 ON g2.new_id = w2.id WHERE g.key IS NOT NULL"
      "  AND g2.key = g.key AND g2.job_id = g.job_id)) END, g.why"
      " FROM judged g LEFT JOIN w ON w.id = g.new_id ORDER BY g.n";
  return sql;
}

}  // namespace baton::store::pg
