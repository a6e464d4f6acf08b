// Per-worker identity on PostgreSQL: bootstrap tokens (worker_enrollments)
// traded for worker credentials (schemas/0017_worker_identity.sql). Only
// hashes are stored; the grant (labels, capacity) travels from the bootstrap
// token to the credential it becomes.
#include <boost/json.hpp>

#include "admin_sql.h"
#include "baton/store_pg/pg_admin_store.h"

namespace baton::store::pg {

namespace json = boost::json;

namespace {

std::string labels_json(const std::map<std::string, std::string>& labels) {
  json::object o;
  for (const auto& [k, v] : labels) o[k] = v;
  return json::serialize(o);
}

std::map<std::string, std::string> labels_of(const std::string& text) {
  std::map<std::string, std::string> out;
  const json::value parsed = json::parse(text);
  for (const auto& kv : parsed.as_object())
    if (kv.value().is_string()) out[std::string(kv.key())] = std::string(kv.value().as_string());
  return out;
}

constexpr const char* enrollment_json =
    "jsonb_build_object('id', e.id, 'worker_id', e.worker_id, 'labels', e.labels, 'capacity', e.capacity,"
    " 'expires_at', e.expires_at, 'created_at', e.created_at, 'created_by', e.created_by)::text";

}  // namespace

Result<Page> PgAdminStore::list_worker_credentials(int limit, std::optional<std::int64_t> before_id) {
  // Credentials and the bootstrap tokens still waiting to be used, in one
  // list: cursor ids are the credential's or, for a pending enrollment, its
  // negated id (so the two never collide and pending ones come last).
  return page_query(
      session_,
      "SELECT k, item FROM ("
      " SELECT c.id AS k, jsonb_build_object('kind', 'credential', 'id', c.id, 'worker_id', c.worker_id,"
      "  'labels', c.labels, 'capacity', c.capacity, 'created_at', c.created_at, 'last_used_at', c.last_used_at,"
      "  'revoked_at', c.revoked_at, 'enrollment_id', c.enrollment_id)::text AS item FROM worker_credentials c"
      " UNION ALL"
      " SELECT -e.id, jsonb_build_object('kind', 'bootstrap', 'id', e.id, 'worker_id', e.worker_id,"
      "  'labels', e.labels, 'capacity', e.capacity, 'created_at', e.created_at, 'expires_at', e.expires_at,"
      "  'created_by', e.created_by, 'revoked_at', e.revoked_at)::text FROM worker_enrollments e"
      "  WHERE e.used_at IS NULL AND e.revoked_at IS NULL AND e.expires_at > now()"
      ") l WHERE ($1::bigint IS NULL OR k < $1) ORDER BY k DESC LIMIT $2",
      limit, before_id);
}

Result<std::optional<WorkerCredential>> PgAdminStore::worker_credential_by_hash(const std::string& sha256_hex) {
  return session_.with<std::optional<WorkerCredential>>(
      [&](pqxx::connection& c) -> Result<std::optional<WorkerCredential>> {
        pqxx::nontransaction tx{c};
        auto rows = tx.exec_params(
            "UPDATE worker_credentials SET last_used_at = now() WHERE token_sha256 = $1 AND revoked_at IS NULL"
            " RETURNING id, worker_id, labels::text, capacity",
            sha256_hex);
        if (rows.empty()) return std::optional<WorkerCredential>{};
        return std::optional<WorkerCredential>{
            WorkerCredential{rows[0][0].as<std::int64_t>(), rows[0][1].as<std::string>(),
                             labels_of(rows[0][2].as<std::string>()), rows[0][3].as<int>()}};
      });
}

Result<std::vector<std::int64_t>> PgAdminStore::recently_revoked_worker_credentials(int within_seconds) {
  return session_.with<std::vector<std::int64_t>>([&](pqxx::connection& c) -> Result<std::vector<std::int64_t>> {
    pqxx::nontransaction tx{c};
    std::vector<std::int64_t> out;
    for (const auto& r : tx.exec_params("SELECT id FROM worker_credentials WHERE revoked_at IS NOT NULL"
                                        " AND revoked_at > now() - make_interval(secs => $1)",
                                        within_seconds))
      out.push_back(r[0].as<std::int64_t>());
    return out;
  });
}

Result<EnrollResult> PgAdminStore::enroll_worker(const std::string& bootstrap_sha256, const std::string& worker_id,
                                                 const std::string& credential_sha256) {
  return session_.with<EnrollResult>([&](pqxx::connection& c) -> Result<EnrollResult> {
    pqxx::work tx{c};
    // FOR UPDATE: two workers racing with one token, one of them wins.
    auto rows = tx.exec_params(
        "SELECT id, worker_id, used_at IS NOT NULL, revoked_at IS NOT NULL, expires_at <= now(), expires_at::text"
        " FROM worker_enrollments WHERE token_sha256 = $1 FOR UPDATE",
        bootstrap_sha256);
    auto refuse = [](EnrollOutcome o, std::string why) { return EnrollResult{o, "{}", std::move(why)}; };
    if (rows.empty()) return refuse(EnrollOutcome::unknown_token, "unknown bootstrap token");
    const auto& e = rows[0];
    const std::int64_t enrollment = e[0].as<std::int64_t>();
    if (e[3].as<bool>()) return refuse(EnrollOutcome::revoked, "the bootstrap token was revoked");
    if (e[2].as<bool>()) return refuse(EnrollOutcome::used, "the bootstrap token was already used");
    if (e[4].as<bool>())
      return refuse(EnrollOutcome::expired, "the bootstrap token expired at " + e[5].as<std::string>());
    if (e[1].as<std::string>() != worker_id)
      return refuse(EnrollOutcome::other_worker, "the bootstrap token was made for another worker id");
    tx.exec_params("UPDATE worker_enrollments SET used_at = now() WHERE id = $1", enrollment);
    // One live credential per worker: the new one replaces the old (a
    // rotation; the old one's sessions are closed by every node's sweep).
    tx.exec_params("UPDATE worker_credentials SET revoked_at = now() WHERE worker_id = $1 AND revoked_at IS NULL",
                   worker_id);
    auto made = tx.exec_params(
        "INSERT INTO worker_credentials (worker_id, labels, capacity, token_sha256, enrollment_id)"
        " SELECT worker_id, labels, capacity, $2, id FROM worker_enrollments WHERE id = $1"
        " RETURNING jsonb_build_object('credential_id', id, 'worker_id', worker_id, 'labels', labels,"
        " 'capacity', capacity)::text",
        enrollment, credential_sha256);
    const std::string out = made[0][0].as<std::string>();
    audit_in(tx, Actor{"worker:" + worker_id, Epoch{0}}, "worker.enroll", "worker:" + worker_id, std::nullopt, out);
    tx.commit();
    return EnrollResult{EnrollOutcome::enrolled, out, {}};
  });
}

Result<AdminResult> PgAdminStore::create_worker_enrollment(const Actor& who, const WorkerGrant& grant,
                                                           const std::string& sha256_hex) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(std::string("INSERT INTO worker_enrollments AS e (worker_id, labels, capacity,"
                                           " token_sha256, expires_at, created_by)"
                                           " VALUES ($1, $2::jsonb, $3, $4, now() + make_interval(secs => $5), $6)"
                                           " RETURNING ") +
                                   enrollment_json,
                               grant.worker_id, labels_json(grant.labels), grant.capacity, sha256_hex,
                               grant.ttl_seconds, who.name);
    audit_in(tx, who, "worker.enrollment", "worker:" + grant.worker_id, std::nullopt, rows[0][0].as<std::string>());
    tx.commit();
    return applied(rows[0][0].as<std::string>());
  });
}

Result<AdminResult> PgAdminStore::rotate_worker_credential(const Actor& who, const std::string& worker_id,
                                                           std::int64_t ttl_seconds, const std::string& sha256_hex) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(std::string("INSERT INTO worker_enrollments AS e (worker_id, labels, capacity,"
                                           " token_sha256, expires_at, created_by)"
                                           " SELECT worker_id, labels, capacity, $2,"
                                           " now() + make_interval(secs => $3), $4"
                                           " FROM worker_credentials WHERE worker_id = $1 AND revoked_at IS NULL"
                                           " RETURNING ") +
                                   enrollment_json,
                               worker_id, sha256_hex, ttl_seconds, who.name);
    if (rows.empty())
      return refused(AdminOutcome::not_found, "worker '" + worker_id +
                                                  "' has no live credential to rotate (enroll it: baton ctl "
                                                  "workers enroll)");
    audit_in(tx, who, "worker.rotate", "worker:" + worker_id, std::nullopt, rows[0][0].as<std::string>());
    tx.commit();
    return applied(rows[0][0].as<std::string>());
  });
}

Result<AdminResult> PgAdminStore::revoke_worker_credentials(const Actor& who, const std::string& worker_id) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto credentials = tx.exec_params(
        "UPDATE worker_credentials SET revoked_at = now() WHERE worker_id = $1 AND revoked_at IS NULL", worker_id);
    auto enrollments = tx.exec_params(
        "UPDATE worker_enrollments SET revoked_at = now() WHERE worker_id = $1 AND used_at IS NULL"
        " AND revoked_at IS NULL",
        worker_id);
    if (credentials.affected_rows() == 0 && enrollments.affected_rows() == 0)
      return refused(AdminOutcome::not_found,
                     "worker '" + worker_id + "' has no live credential and no unused bootstrap token");
    json::object out{{"worker_id", worker_id},
                     {"credentials_revoked", credentials.affected_rows()},
                     {"bootstrap_tokens_revoked", enrollments.affected_rows()}};
    audit_in(tx, who, "worker.revoke", "worker:" + worker_id, std::nullopt, json::serialize(out));
    tx.commit();
    return applied(json::serialize(out));
  });
}

}  // namespace baton::store::pg
