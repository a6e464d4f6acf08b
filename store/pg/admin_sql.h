#pragma once
// What the admin store's translation units share: paging, the audit record
// written in a mutation's own transaction, and the shapes of a result.
// Internal to store/pg.
#include <pqxx/pqxx>
#include <string>

#include "baton/store/admin_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

/// Rows of (cursor, item json): at most `limit` items, and the cursor of
/// the last one when a further row shows that more follow.
inline Page page_of(const pqxx::result& rows, int limit) {
  Page p;
  p.items_json = "[";
  int n = 0;
  for (const auto& row : rows) {
    if (n == limit) {
      p.next_cursor = rows[static_cast<pqxx::result::size_type>(limit - 1)][0].as<std::string>();
      break;
    }
    p.items_json += (n++ ? "," : "") + row[1].as<std::string>();
  }
  p.items_json += "]";
  return p;
}

/// One page of an admin list: `sql` selects (cursor, item json) rows and
/// takes the row limit as its last parameter, after `args`.
template <class... Args>
Result<Page> page_query(PgSession& session, const char* sql, int limit, const Args&... args) {
  return session.with<Page>([&](pqxx::connection& c) -> Result<Page> {
    pqxx::nontransaction tx{c};
    return page_of(tx.exec_params(sql, args..., limit + 1), limit);
  });
}

/// The audit record of a mutation, in the mutation's transaction.
inline void audit_in(pqxx::work& tx, const Actor& who, const std::string& action, const std::string& subject,
                     const std::optional<std::string>& before_json, const std::optional<std::string>& after_json) {
  tx.exec_params(
      "INSERT INTO audit_log (actor, action, subject, epoch, details)"
      " VALUES ($1, $2, $3, $4, jsonb_build_object('before', $5::jsonb, 'after', $6::jsonb))",
      who.name, action, subject, who.epoch.value, before_json, after_json);
}

// The ledger's account of a cron job's slots due in a window `w` (name,
// len) ending a second ago (the last second's slot may not be decided
// yet), for the job `j`: counted from when the job existed or its schedule
// was last resumed. Every due slot has an entry: created (on time, or late
// when caught up), or given up (a range, with its count) by the epoch that
// decided it. The delay is the run's creation after its slot.
inline const std::string cron_cadence_json =
    "(SELECT jsonb_build_object('since_unix', s.since_s, 'until_unix', s.until_s,"
    " 'fired', count(*) FILTER (WHERE l.decision = 'created'),"
    " 'late', count(*) FILTER (WHERE l.decision = 'created' AND l.reason = 'caught_up'),"
    " 'skipped', coalesce(sum(coalesce(l.slot_count, 1)) FILTER (WHERE l.decision = 'skipped'), 0),"
    " 'epochs', count(DISTINCT l.epoch),"
    " 'delay_ms_p50', round((percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM l.at - l.slot) "
    "* 1000))"
    "  FILTER (WHERE l.decision = 'created'))::numeric, 1),"
    " 'delay_ms_p99', round((percentile_cont(0.99) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM l.at - "
    "l.slot) * 1000))"
    "  FILTER (WHERE l.decision = 'created'))::numeric, 1))"
    // whole seconds, the first one after the window's start and the last
    // one before its end: the caller counts the due slots over the same ones
    " FROM (SELECT ceil(extract(epoch FROM greatest(now() - w.len, j.created_at,"
    "  coalesce(j.schedule_resumed_at, '-infinity'))))::bigint AS since_s,"
    "  floor(extract(epoch FROM now() - interval '1 second'))::bigint AS until_s) s"
    " LEFT JOIN decision_ledger l ON l.job_definition_id = j.id AND l.slot >= to_timestamp(s.since_s)"
    "  AND l.slot <= to_timestamp(s.until_s) AND l.decision IN ('created', 'skipped')"
    " GROUP BY s.since_s, s.until_s)";

inline AdminResult applied(std::string json) { return {AdminOutcome::applied, std::move(json), {}}; }
inline AdminResult refused(AdminOutcome o, std::string message, std::string json = "{}") {
  return {o, std::move(json), std::move(message)};
}

}  // namespace baton::store::pg
