#include "due_runs_read.h"

#include "baton/base/weaken.h"
#include "due_run_row.h"

namespace baton::store::pg {

// Every run that can be due is unfinished, and `finished_at IS NULL` is the
// predicate of the open index (schemas/0021) that finds them: no index
// holds `state`, so a read of unfinished runs says so to be served by that
// index.
const std::string unfinished = "finished_at IS NULL";

// When a run of the row alias `r` is due for assignment: the dispatcher's
// read (due_runs, with `bound` its look-ahead) and the read of what waits
// while dispatch is disabled (waiting_runs, `bound` now()) share it. due_at
// (schemas/0021) is a PENDING run's slot or creation time, or its jitter's
// start if later; a RETRY_WAITING run's retry time. PENDING runs due
// within the bound come (they are assigned ahead of their time and their
// start is written at it: run_start_batch checks the time again), retries
// only once due, orphans at once.
std::string due(const std::string& r, const std::string& bound) {
  return r + "." + unfinished + " AND " + r + ".due_at <= " + bound + " AND (" + r +
         ".state IN ('PENDING', 'ORPHANED') OR (" + r + ".state = 'RETRY_WAITING' AND " + r + ".due_at <= now()))";
}

const std::string& due_runs_statement() {
  // One scan of the open index in dispatch order (schemas/0021), cut by
  // the limit after the filters, so that a run no worker of this label
  // set can take never fills the batch and blocks the runs behind it
  // (head-of-line blocking). The runs in flight are in that index too and
  // are skipped by their state.
  //
  // The jobs whose runs cannot be taken are found first, once: a selector
  // these labels do not satisfy, an instance limit reached, mutual
  // exclusion while the exclusive lock is held (schemas/0010), or an
  // exclusive run active or due (schemas/0033). As a
  // per-row test on job_runs the planner took that filter for a very
  // selective one, expected fewer rows than the limit, and read every
  // unfinished run and sorted them (7-97 ms for 20,000 runs, against
  // 0.3 ms for the ordered scan that stops at the limit).
  static const std::string sql =
      "PREPARE due_runs(int, jsonb, bigint, jsonb) AS "
      "WITH unfit AS MATERIALIZED (SELECT coalesce(array_agg(jd.id), '{}') AS ids FROM job_definitions jd"
      "  WHERE NOT jd.worker_selector <@ $2::jsonb"
      "  OR (baton_instance_limit(jd) IS NOT NULL AND (SELECT count(*) FROM job_runs x"
      "   WHERE x.job_definition_id = jd.id AND x.instance_no IS NOT NULL) >= baton_instance_limit(jd))"
      "  OR (jd.mutually_exclusive AND EXISTS (SELECT 1 FROM job_runs x WHERE x.exclusive_lock))"
      // exclusive_execution (schemas/0033): while an exclusive run is
      // active, or one is due that an attached worker taking runs could
      // take ($4, their label sets), no other job's run is read (the due
      // one waits for the runs in flight to end, and nothing new starts
      // meanwhile, so it is never starved); an exclusive job's run is
      // not read while another one is active. A due exclusive run that
      // no such worker matches drains nothing: it would hold back every
      // other run for a worker that is not there (the leader records
      // no_worker_matches for it).
      "  OR (" +
      std::string(weakened("exclusive_gate") ? "false" : "true") +  // weakened chaos builds only
      " AND jd.exclusive_execution AND EXISTS (SELECT 1 FROM job_runs x"
      "   WHERE x.gate IS NOT NULL AND x.gate @> '(,)'::int8range))"
      "  OR (" +
      std::string(weakened("exclusive_gate") ? "false" : "true") +
      // An exclusive job's due run is looked up job by job, one probe of
      // the unfinished runs' index each (LATERAL ... LIMIT 1, and no
      // sequential scan: due_runs() says so). As a join, the generic plan
      // read every unfinished run on every pass while any job was
      // exclusive: 35.6 ms a pass, 1,637 runs/s against 6,400 with 80,000
      // runs queued (docs/performance.md, "An exclusive job read the
      // whole queue").
      " AND NOT jd.exclusive_execution AND EXISTS (SELECT 1 FROM job_definitions e CROSS JOIN LATERAL"
      "   (SELECT 1 FROM job_runs x WHERE x.job_definition_id = e.id AND " +
      due("x", "now()") +
      "   LIMIT 1) AS due_exclusive WHERE e.exclusive_execution AND e.deleted_at IS NULL AND NOT e.paused"
      "   AND EXISTS (SELECT 1 FROM jsonb_array_elements($4::jsonb) AS taking(labels)"
      "    WHERE e.worker_selector <@ taking.labels)"
      "   UNION ALL SELECT 1 FROM job_runs x WHERE x.gate IS NOT NULL AND x.gate @> '(,)'::int8range)))"
      " SELECT " +
      due_run_columns() +
      " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id"
      " WHERE " +
      // The due bound and the limit as subqueries (computed
      // once), costed alike with and without the parameter's
      // value: the generic plan is the same ordered scan as a
      // custom one. With 20,000 runs queued that was enough for
      // PostgreSQL to settle on it; with 80,000 it was not, and
      // due_runs() now asks for it (docs/performance.md,
      // "Statements that cost what they must", "Reads that grew
      // with the backlog").
      due("r", "(SELECT now() + $3 * interval '1 millisecond')") +
      " AND coalesce(r.job_definition_id <> ALL ((SELECT ids FROM unfit)::bigint[]), true)"
      // A run whose key is at its limit, or whose permits are all taken
      // (schemas/0035), is not read: the runs of other keys behind it
      // would otherwise wait behind a batch of runs that cannot start.
      // Computed only for a job that has such limits.
      " AND " +
      keyed_room_sql() + " ORDER BY r.priority DESC, r.due_at, r.id LIMIT (SELECT $1::int)";
  return sql;
}

}  // namespace baton::store::pg
