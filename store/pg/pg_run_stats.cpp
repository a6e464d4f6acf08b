// Run statistics over time on PostgreSQL (schemas/0039, docs/dashboard.md):
// the roll-up step any node takes once a minute, and the bucketed series the
// dashboard's charts draw.
#include "baton/store_pg/pg_admin_store.h"

namespace baton::store::pg {

Result<int> PgAdminStore::roll_up_run_stats(int max_minutes) {
  return session_.with<int>([&](pqxx::connection& c) -> Result<int> {
    pqxx::work tx{c};
    const int left = tx.exec_params1("SELECT baton_roll_up_run_stats($1)", max_minutes)[0].as<int>();
    tx.commit();
    return left;
  });
}

Result<std::optional<std::string>> PgAdminStore::run_series(const SeriesQuery& q) {
  // Buckets aligned to their size, the last one holding now. Minutes rolled
  // up are read from run_stats_minutes; those after it (at most a few, once
  // the roll-up runs) from the run table by the same function. A bucket's
  // p50 and p95 are its minutes' percentiles weighted by their runs: exact
  // for one-minute buckets, an approximation for longer ones (said in the
  // docs). The backlog is sampled cluster-wide, so a job's series has none.
  static const std::string sql =
      "WITH job AS (SELECT id FROM job_definitions WHERE name = $3 AND deleted_at IS NULL),"
      " bounds AS (SELECT to_timestamp(floor(extract(epoch FROM now()) / $2) * $2) AS last_at),"
      " span AS (SELECT last_at - make_interval(secs => $1 - $2) AS from_at, last_at FROM bounds),"
      " rolled AS (SELECT greatest(coalesce((SELECT rolled_through FROM run_stats_rollup WHERE id = 1),"
      "  (SELECT from_at FROM span)), (SELECT from_at FROM span)) AS at),"
      " minutes AS (SELECT m.* FROM run_stats_minutes m WHERE m.minute >= (SELECT from_at FROM span)"
      "  AND m.minute < (SELECT at FROM rolled)"
      "  UNION ALL SELECT l.* FROM baton_run_stats_between((SELECT at FROM rolled), now() + interval '1 minute') l),"
      " picked AS (SELECT m.*, m.succeeded + m.failed + m.timed_out + m.canceled AS n FROM minutes m"
      "  WHERE $3::text IS NULL OR m.job_definition_id = (SELECT id FROM job)),"
      " buckets AS (SELECT generate_series((SELECT from_at FROM span), (SELECT last_at FROM span),"
      "  make_interval(secs => $2)) AS at),"
      " rows AS (SELECT b.at,"
      "  coalesce(sum(p.succeeded), 0) AS succeeded, coalesce(sum(p.failed), 0) AS failed,"
      "  coalesce(sum(p.timed_out), 0) AS timed_out, coalesce(sum(p.canceled), 0) AS canceled,"
      "  round((sum(p.duration_p50_ms * p.n) / nullif(sum(p.n) FILTER (WHERE p.duration_p50_ms IS NOT NULL), 0))"
      "   ::numeric, 1) AS duration_p50_ms,"
      "  round((sum(p.duration_p95_ms * p.n) / nullif(sum(p.n) FILTER (WHERE p.duration_p95_ms IS NOT NULL), 0))"
      "   ::numeric, 1) AS duration_p95_ms,"
      "  round((sum(p.start_latency_p50_ms * p.n) / nullif(sum(p.n) FILTER (WHERE p.start_latency_p50_ms IS NOT"
      "   NULL), 0))::numeric, 1) AS start_latency_p50_ms,"
      "  round((sum(p.start_latency_p95_ms * p.n) / nullif(sum(p.n) FILTER (WHERE p.start_latency_p95_ms IS NOT"
      "   NULL), 0))::numeric, 1) AS start_latency_p95_ms,"
      "  (SELECT max(s.pending) FROM run_backlog_samples s WHERE $3::text IS NULL AND s.minute >= b.at"
      "   AND s.minute < b.at + make_interval(secs => $2)) AS pending,"
      "  (SELECT round(max(s.oldest_pending_age_s)::numeric, 1) FROM run_backlog_samples s WHERE $3::text IS NULL"
      "   AND s.minute >= b.at AND s.minute < b.at + make_interval(secs => $2)) AS oldest_pending_age_s"
      "  FROM buckets b LEFT JOIN picked p ON p.minute >= b.at AND p.minute < b.at + make_interval(secs => $2)"
      "  GROUP BY b.at)"
      " SELECT CASE WHEN $3::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM job) THEN NULL ELSE"
      "  jsonb_build_object('window', $4::text, 'bucket_seconds', $2::int, 'job', $3::text,"
      "  'from', (SELECT from_at FROM span), 'to', (SELECT last_at FROM span) + make_interval(secs => $2),"
      "  'rolled_through', (SELECT rolled_through FROM run_stats_rollup WHERE id = 1),"
      "  'buckets', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.at), '[]'::jsonb) FROM rows r),"
      // Every epoch that led during the window: the one leading at its start
      // and those elected in it (the markers the charts draw).
      "  'epochs', (SELECT coalesce(jsonb_agg(jsonb_build_object('epoch', e.epoch, 'leader_id', e.leader_id,"
      "   'elected_at', e.elected_at, 'ended_at', e.ended_at, 'end_reason', e.end_reason) ORDER BY e.epoch),"
      "   '[]'::jsonb) FROM epoch_history e WHERE e.elected_at >= (SELECT from_at FROM span)"
      "   OR e.epoch = (SELECT max(x.epoch) FROM epoch_history x WHERE x.elected_at < (SELECT from_at FROM span))))"
      "  ::text END";
  return session_.with<std::optional<std::string>>([&](pqxx::connection& c) -> Result<std::optional<std::string>> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, q.window_seconds, q.bucket_seconds, q.job, q.window_name);
    if (r[0].is_null()) return std::optional<std::string>{};
    return std::optional<std::string>{r[0].as<std::string>()};
  });
}

}  // namespace baton::store::pg
