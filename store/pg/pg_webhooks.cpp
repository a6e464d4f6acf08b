// Webhooks on PostgreSQL (schemas/0038, docs/webhooks.md): the admin API's
// definitions and deliveries (PgAdminStore, audited like every mutation),
// and the leader's side of the delivery queue (PgWebhookOutbox).
#include <boost/json.hpp>

#include "admin_sql.h"
#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_webhook_outbox.h"
#include "pg_array.h"

namespace baton::store::pg {

namespace json = boost::json;

namespace {

// A webhook as listed: never its secret, only the secret's SHA-256; and
// how its deliveries stand.
constexpr const char* webhook_json =
    "jsonb_build_object('name', w.name, 'url', w.url, 'events', to_jsonb(w.events), 'jobs', to_jsonb(w.jobs),"
    " 'failures_in_a_row', w.failures_in_a_row, 'max_attempts', w.max_attempts, 'enabled', w.enabled,"
    " 'secret_sha256', encode(sha256(convert_to(w.secret, 'UTF8')), 'hex'), 'version', w.version,"
    " 'created_at', w.created_at, 'created_by', w.created_by, 'updated_at', w.updated_at,"
    " 'deliveries', (SELECT jsonb_build_object('pending', count(*) FILTER (WHERE d.state = 'pending'),"
    "  'delivered', count(*) FILTER (WHERE d.state = 'delivered'), 'failed', count(*) FILTER (WHERE d.state = "
    "'failed'),"
    "  'last_delivered_at', max(d.finished_at) FILTER (WHERE d.state = 'delivered'),"
    "  'last_error', (SELECT e.last_error FROM webhook_deliveries e WHERE e.webhook_id = w.id"
    "   AND e.last_error IS NOT NULL ORDER BY e.last_attempt_at DESC NULLS LAST LIMIT 1))"
    "  FROM webhook_deliveries d WHERE d.webhook_id = w.id))";

constexpr const char* delivery_json =
    "jsonb_build_object('id', d.id, 'webhook', w.name, 'event_id', d.event_id, 'kind', d.kind, 'state', d.state,"
    " 'attempts', d.attempts, 'max_attempts', w.max_attempts,"
    " 'next_attempt_at', CASE WHEN d.state = 'pending' THEN d.next_attempt_at END,"
    " 'last_status', d.last_status, 'last_error', d.last_error, 'created_at', d.created_at,"
    " 'last_attempt_at', d.last_attempt_at, 'finished_at', d.finished_at, 'payload', d.body::jsonb)";

std::vector<std::string> strings_of(const std::string& json_array) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(json_array);
  for (const auto& v : parsed.as_array()) out.emplace_back(v.as_string());
  return out;
}

}  // namespace

Result<Page> PgAdminStore::list_webhooks(int limit, std::optional<std::string> after_name,
                                         std::optional<std::string> only) {
  return page_query(session_,
                    (std::string("SELECT w.name, ") + webhook_json +
                     "::text FROM webhooks w WHERE ($1::text IS NULL OR w.name > $1)"
                     " AND ($2::text IS NULL OR w.name = $2) ORDER BY w.name LIMIT $3")
                        .c_str(),
                    limit, after_name, only);
}

Result<std::optional<StoredWebhook>> PgAdminStore::webhook_definition(const std::string& name) {
  return session_.with<std::optional<StoredWebhook>>([&](pqxx::connection& c) -> Result<std::optional<StoredWebhook>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "SELECT w.url, to_jsonb(w.events)::text, to_jsonb(w.jobs)::text, w.failures_in_a_row, w.max_attempts,"
        " w.enabled, encode(sha256(convert_to(w.secret, 'UTF8')), 'hex'), w.version FROM webhooks w"
        " WHERE w.name = $1",
        name);
    if (rows.empty()) return std::optional<StoredWebhook>{};
    const auto& r = rows[0];
    StoredWebhook out;
    out.definition.name = name;
    out.definition.url = r[0].as<std::string>();
    out.definition.events = strings_of(r[1].as<std::string>());
    out.definition.jobs = strings_of(r[2].as<std::string>());
    out.definition.failures_in_a_row = r[3].as<int>();
    out.definition.max_attempts = r[4].as<int>();
    out.definition.enabled = r[5].as<bool>();
    out.secret_sha256 = r[6].as<std::string>();
    out.version = r[7].as<std::int64_t>();
    return std::optional<StoredWebhook>{std::move(out)};
  });
}

Result<AdminResult> PgAdminStore::put_webhook(const Actor& who, const WebhookDefinition& w) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto before =
        tx.exec_params(std::string("SELECT ") + webhook_json + "::text FROM webhooks w WHERE w.name = $1", w.name);
    if (w.secret.empty()) {
      // An update that keeps the stored secret (a webhook is never created
      // without one: the table's CHECK refuses it).
      auto r = tx.exec_params(
          "UPDATE webhooks SET url = $2, events = $3::text[], jobs = $4::text[], failures_in_a_row = $5,"
          " max_attempts = $6, enabled = $7, version = version + 1, updated_at = now() WHERE name = $1",
          w.name, w.url, pg_array(w.events), pg_array(w.jobs), w.failures_in_a_row, w.max_attempts, w.enabled);
      if (r.affected_rows() == 0)
        return refused(AdminOutcome::not_found, "no webhook '" + w.name + "': a new one needs a secret");
    } else {
      tx.exec_params(
          "INSERT INTO webhooks (name, url, events, jobs, failures_in_a_row, max_attempts, secret, enabled,"
          " created_by) VALUES ($1, $2, $3::text[], $4::text[], $5, $6, $7, $8, $9)"
          " ON CONFLICT (name) DO UPDATE SET url = excluded.url, events = excluded.events, jobs = excluded.jobs,"
          " failures_in_a_row = excluded.failures_in_a_row, max_attempts = excluded.max_attempts,"
          " secret = excluded.secret, enabled = excluded.enabled, version = webhooks.version + 1, updated_at = now()",
          w.name, w.url, pg_array(w.events), pg_array(w.jobs), w.failures_in_a_row, w.max_attempts, w.secret, w.enabled,
          who.name);
    }
    auto after =
        tx.exec_params(std::string("SELECT ") + webhook_json + "::text FROM webhooks w WHERE w.name = $1", w.name);
    const std::string now = after[0][0].as<std::string>();
    audit_in(tx, who, before.empty() ? "webhook.create" : "webhook.update", "webhook:" + w.name,
             before.empty() ? std::nullopt : std::optional<std::string>(before[0][0].as<std::string>()), now);
    tx.commit();
    return applied(now);
  });
}

Result<AdminResult> PgAdminStore::delete_webhook(const Actor& who, const std::string& name) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto before =
        tx.exec_params(std::string("SELECT ") + webhook_json + "::text FROM webhooks w WHERE w.name = $1", name);
    if (before.empty()) return refused(AdminOutcome::not_found, "no webhook '" + name + "'");
    tx.exec_params("DELETE FROM webhooks WHERE name = $1", name);
    audit_in(tx, who, "webhook.delete", "webhook:" + name, before[0][0].as<std::string>(), std::nullopt);
    tx.commit();
    return applied(before[0][0].as<std::string>());
  });
}

Result<std::optional<Page>> PgAdminStore::list_webhook_deliveries(const std::string& webhook,
                                                                  std::optional<std::string> state, int limit,
                                                                  std::optional<std::int64_t> before_id) {
  return session_.with<std::optional<Page>>([&](pqxx::connection& c) -> Result<std::optional<Page>> {
    pqxx::nontransaction tx{c};
    if (tx.exec_params("SELECT 1 FROM webhooks WHERE name = $1", webhook).empty()) return std::optional<Page>{};
    return std::optional<Page>{
        page_of(tx.exec_params(std::string("SELECT d.id::text, ") + delivery_json +
                                   "::text FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                                   " WHERE w.name = $1 AND ($2::text IS NULL OR d.state = $2)"
                                   " AND ($3::bigint IS NULL OR d.id < $3) ORDER BY d.id DESC LIMIT $4",
                               webhook, state, before_id, limit + 1),
                limit)};
  });
}

Result<AdminResult> PgAdminStore::redeliver(const Actor& who, std::int64_t delivery) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        std::string("WITH d AS (UPDATE webhook_deliveries SET state = 'pending', attempts = 0,"
                    " next_attempt_at = now(), claimed_until = NULL, finished_at = NULL WHERE id = $1 RETURNING *)"
                    " SELECT w.name, ") +
            delivery_json + "::text FROM d JOIN webhooks w ON w.id = d.webhook_id",
        delivery);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no delivery " + std::to_string(delivery));
    tx.exec(std::string("SELECT pg_notify('") + webhooks_channel + "', '')");
    audit_in(tx, who, "webhook.redeliver", "webhook:" + rows[0][0].as<std::string>(), std::nullopt,
             rows[0][1].as<std::string>());
    tx.commit();
    return applied(rows[0][1].as<std::string>());
  });
}

Result<AdminResult> PgAdminStore::ping_webhook(const Actor& who, const std::string& name) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    // One ping outstanding per webhook (security review N-L1): pings
    // queued by the thousand would go out ahead of the alerts behind them.
    // The pending deliveries are what the due index holds.
    auto pending = tx.exec_params(std::string("SELECT ") + delivery_json +
                                      "::text FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                                      " WHERE w.name = $1 AND d.state = 'pending' AND d.kind = 'ping' LIMIT 1",
                                  name);
    if (!pending.empty())
      return AdminResult{AdminOutcome::conflict, pending[0][0].as<std::string>(),
                         "a ping to webhook '" + name + "' is pending already: one at a time"};
    auto rows = tx.exec_params(
        std::string("WITH ev AS (SELECT gen_random_uuid() AS id),"
                    " d AS (INSERT INTO webhook_deliveries (webhook_id, event_id, kind, body)"
                    " SELECT w.id, ev.id, 'ping', jsonb_build_object('id', ev.id, 'kind', 'ping',"
                    " 'occurred_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
                    " 'webhook', w.name, 'data', jsonb_build_object('requested_by', $2::text))::text"
                    " FROM webhooks w, ev WHERE w.name = $1 RETURNING *)"
                    " SELECT ") +
            delivery_json + "::text FROM d JOIN webhooks w ON w.id = d.webhook_id",
        name, who.name);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no webhook '" + name + "'");
    tx.exec(std::string("SELECT pg_notify('") + webhooks_channel + "', '')");
    audit_in(tx, who, "webhook.ping", "webhook:" + name, std::nullopt, rows[0][0].as<std::string>());
    tx.commit();
    return applied(rows[0][0].as<std::string>());
  });
}

PgWebhookOutbox::PgWebhookOutbox(const std::string& url, const std::string& application_name)
    : session_(url, application_name) {}

Result<ClaimedDeliveries> PgWebhookOutbox::claim_deliveries(Epoch epoch, int limit, Millis lease) {
  // Claimed for a lease, not locked for the attempt: the attempt is an HTTP
  // call of up to its timeout, and no transaction stays open across it. A
  // claim of an earlier epoch is void: the leader that made it may be dead
  // with its attempt unrecorded, and the next one sends it again at once
  // (the same event id; should the old one still be sending, the receiver
  // sees it twice and keeps it once, and its record no longer applies).
  // One per webhook, and none of a webhook whose claim of this epoch is
  // still out (security review N-L1): a slow receiver's backlog never
  // fills a batch, and the sender sends a batch's POSTs at once.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1),"
      " out AS (SELECT DISTINCT webhook_id FROM webhook_deliveries"
      "  WHERE state = 'pending' AND claimed_until > now() AND claimed_epoch = $1),"
      " heads AS (SELECT DISTINCT ON (d.webhook_id) d.id, d.next_attempt_at"
      "  FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
      "  WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND w.enabled"
      "  AND (d.claimed_until IS NULL OR d.claimed_until <= now() OR d.claimed_epoch < $1)"
      "  AND d.webhook_id NOT IN (SELECT webhook_id FROM out)"
      "  AND (SELECT epoch FROM fence) = $1"
      "  ORDER BY d.webhook_id, d.next_attempt_at, d.id),"
      " picked AS (SELECT d.id FROM webhook_deliveries d JOIN heads h ON h.id = d.id"
      "  ORDER BY h.next_attempt_at, d.id LIMIT $2 FOR UPDATE OF d SKIP LOCKED),"
      " claimed AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(),"
      "  claimed_until = now() + $3 * interval '1 millisecond', claimed_epoch = $1"
      "  FROM picked p WHERE d.id = p.id RETURNING d.*)"
      " SELECT (SELECT epoch FROM fence), c.id, w.name, w.url, w.secret, c.event_id::text, c.kind, c.body,"
      "  c.attempts, w.max_attempts"
      " FROM (SELECT 1) one LEFT JOIN claimed c ON true LEFT JOIN webhooks w ON w.id = c.webhook_id ORDER BY c.id";
  return session_.with<ClaimedDeliveries>([&](pqxx::connection& c) -> Result<ClaimedDeliveries> {
    pqxx::nontransaction tx{c};
    ClaimedDeliveries out;
    for (const auto& r : tx.exec_params(sql, epoch.value, limit, static_cast<std::int64_t>(lease.count()))) {
      out.current_epoch = Epoch{r[0].is_null() ? 0 : r[0].as<std::int64_t>()};
      if (r[1].is_null()) continue;
      ClaimedDelivery d;
      d.id = r[1].as<std::int64_t>();
      d.webhook = r[2].as<std::string>();
      d.url = r[3].as<std::string>();
      d.secret = r[4].as<std::string>();
      d.event_id = r[5].as<std::string>();
      d.kind = r[6].as<std::string>();
      d.body = r[7].as<std::string>();
      d.attempt = r[8].as<int>();
      d.max_attempts = r[9].as<int>();
      out.deliveries.push_back(std::move(d));
    }
    return out;
  });
}

Result<bool> PgWebhookOutbox::record_delivery(const DeliveryRecord& d) {
  static const std::string sql =
      "UPDATE webhook_deliveries SET state = CASE $3 WHEN 'retry' THEN 'pending' ELSE $3 END,"
      " last_status = $4, last_error = nullif($5, ''), claimed_until = NULL,"
      " next_attempt_at = CASE WHEN $3 = 'retry' THEN now() + $6 * interval '1 millisecond' ELSE next_attempt_at END,"
      " finished_at = CASE WHEN $3 = 'retry' THEN NULL ELSE now() END"
      " WHERE id = $1 AND attempts = $2 AND state = 'pending'";
  return session_.with<bool>([&](pqxx::connection& c) -> Result<bool> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params(sql, d.id, d.attempt, std::string(to_string(d.outcome)), d.status, d.error,
                            static_cast<std::int64_t>(d.retry_in.count()));
    return r.affected_rows() == 1;
  });
}

Result<bool> PgWebhookOutbox::await_deliveries(Millis max) {
  return session_.await_notification(webhooks_channel, max);
}

}  // namespace baton::store::pg
