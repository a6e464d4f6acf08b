#pragma once
// What the admin store's translation units share: paging, the audit record
// written in a mutation's own transaction, and the shapes of a result.
// Internal to store/pg.
#include <pqxx/pqxx>

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

inline AdminResult applied(std::string json) { return {AdminOutcome::applied, std::move(json), {}}; }
inline AdminResult refused(AdminOutcome o, std::string message, std::string json = "{}") {
  return {o, std::move(json), std::move(message)};
}

}  // namespace baton::store::pg
