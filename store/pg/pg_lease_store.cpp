#include "baton/store_pg/pg_lease_store.h"

#include <spdlog/spdlog.h>
#include <pqxx/pqxx>

namespace baton::store::pg {

namespace {

constexpr const char* lease_columns =
    "epoch, coalesce(leader_id, ''), coalesce(leader_incarnation, ''), coalesce(leader_endpoint, ''), released,"
    " floor(extract(epoch FROM (lease_expires_at - now())) * 1000)::bigint, coalesce(handover_to, ''),"
    " coalesce(floor(extract(epoch FROM (handover_until - now())) * 1000)::bigint, 0)";

LeaseView read_lease(const pqxx::row& r) {
  LeaseView v;
  v.epoch = Epoch{r[0].as<std::int64_t>()};
  v.leader_id = r[1].as<std::string>();
  v.leader_incarnation = r[2].as<std::string>();
  v.leader_endpoint = r[3].as<std::string>();
  v.released = r[4].as<bool>();
  v.remaining = Millis{r[5].as<std::int64_t>()};
  v.handover_to = r[6].as<std::string>();
  v.handover_left = Millis{r[7].as<std::int64_t>()};
  return v;
}

}  // namespace

PgLeaseStore::PgLeaseStore(const std::string& url, const std::string& application_name)
    : session_(url, application_name) {
  // Election statements touch one row: one that takes seconds is stuck
  // (a dead peer, a lock held by a paused campaigner), and an election
  // thread stuck in it is a node that no longer follows elections.
  session_.set_call_deadline(std::chrono::seconds(3));
  session_.on_connect([](pqxx::connection& c) {
    pqxx::nontransaction tx{c};
    tx.exec(std::string("LISTEN ") + lease_channel);
  });
}

Result<LeaseView> PgLeaseStore::observe() {
  return session_.with<LeaseView>([](pqxx::connection& c) -> Result<LeaseView> {
    pqxx::nontransaction tx{c};
    return read_lease(tx.exec1(std::string("SELECT ") + lease_columns + " FROM leader_lease WHERE id = 1"));
  });
}

Result<CampaignResult> PgLeaseStore::campaign(const NodeIdentity& me, Millis lease) {
  return session_.with<CampaignResult>([&](pqxx::connection& c) -> Result<CampaignResult> {
    pqxx::work tx{c};
    // FOR UPDATE conflicts with the FOR KEY SHARE every fenced write holds
    // until it commits: from here on no write of the old epoch can commit.
    LeaseView seen =
        read_lease(tx.exec1(std::string("SELECT ") + lease_columns + " FROM leader_lease WHERE id = 1 FOR UPDATE"));
    // A planned handover keeps the lease for the node it names, for a
    // while: checked here too, under the lock, whatever the caller judged.
    if (!seen.expired() || seen.reserved_for_other(me)) {
      tx.abort();
      return CampaignResult{false, seen};
    }
    auto row = tx.exec_params1(std::string("UPDATE leader_lease SET epoch = epoch + 1, leader_id = $1,"
                                           " leader_incarnation = $2, leader_endpoint = $3,"
                                           " lease_expires_at = now() + $4 * interval '1 millisecond',"
                                           " elected_at = now(), renewed_at = now(), released = false,"
                                           " handover_to = NULL, handover_until = NULL"
                                           " WHERE id = 1 RETURNING ") +
                                   lease_columns,
                               me.node_id, me.incarnation, me.endpoint, lease.count());
    LeaseView won = read_lease(row);
    // The receipts' checkpoint of the epoch this one ends (schemas/0042):
    // the lock above has waited out every fenced write of it, so its chains
    // of run ends are complete. That epoch's only: a checkpoint removed
    // later stays missing, and `baton verify --receipts` names it
    // (schemas/0045), instead of this writing it again from heads that may
    // have been rewritten meanwhile. Logged with its digest: a copy an
    // operator keeps outside the database pins what came before it.
    // Logged once committed: a line an operator keeps must name a
    // checkpoint that exists.
    const auto checkpoints = tx.exec_params(
        "UPDATE epoch_history SET receipts = baton_receipt_checkpoint(epoch) WHERE epoch = $1::bigint - 1"
        " AND receipts IS NULL RETURNING epoch, encode(sha256(convert_to(receipts::text, 'UTF8')), 'hex'),"
        " (SELECT count(*) FROM jsonb_object_keys(receipts -> 'runs'))",
        won.epoch.value);
    tx.exec_params(
        "UPDATE epoch_history SET ended_at = now(), end_reason = CASE WHEN $2 THEN 'released' ELSE 'expired' END"
        " WHERE epoch = $1 AND ended_at IS NULL",
        seen.epoch.value, seen.released);
    tx.exec_params(
        "INSERT INTO epoch_history (epoch, leader_id, leader_incarnation, leader_endpoint) VALUES ($1, $2, $3, $4)",
        won.epoch.value, me.node_id, me.incarnation, me.endpoint);
    tx.exec_params(
        "INSERT INTO audit_log (actor, action, subject, epoch, details)"
        " VALUES ($1, 'election', 'leader_lease', $2, jsonb_build_object('incarnation', $3::text,"
        " 'previous_epoch', $4::bigint, 'previous_leader', $5::text))",
        me.node_id, won.epoch.value, me.incarnation, seen.epoch.value, seen.leader_id);
    tx.exec_params("SELECT pg_notify($1, $2)", lease_channel, "elected:" + std::to_string(won.epoch.value));
    tx.commit();
    for (const auto& cp : checkpoints)
      spdlog::info("receipts_checkpoint epoch={} chains={} sha256={} by_epoch={}", cp[0].as<std::int64_t>(),
                   cp[2].as<std::int64_t>(), cp[1].as<std::string>(), won.epoch.value);
    return CampaignResult{true, won};
  });
}

Result<WriteOutcome> PgLeaseStore::renew(Epoch epoch, const NodeIdentity& me, Millis lease) {
  return session_.with<WriteOutcome>([&](pqxx::connection& c) -> Result<WriteOutcome> {
    // One autocommit statement: a renewal that loses its client cannot sit
    // idle in a transaction holding the lease row.
    pqxx::nontransaction tx{c};
    // A plain UPDATE (FOR NO KEY UPDATE): renewal must not wait for, or block,
    // fenced writes of our own epoch. An expired lease is not renewed even if
    // nobody took it: the holder campaigns for a new epoch instead.
    auto r = tx.exec_params(
        "UPDATE leader_lease SET lease_expires_at = now() + $4 * interval '1 millisecond', renewed_at = now()"
        " WHERE id = 1 AND epoch = $1 AND leader_id = $2 AND leader_incarnation = $3 AND NOT released"
        " AND lease_expires_at > now()",
        epoch.value, me.node_id, me.incarnation, lease.count());
    return r.affected_rows() == 1 ? WriteOutcome::applied : WriteOutcome::fenced;
  });
}

Result<WriteOutcome> PgLeaseStore::release(Epoch epoch, const NodeIdentity& me) {
  return hand_over(epoch, me, "", Millis{0}, "");  // kept for no one; a node's own act, not audited
}

// A release, kept for `to` (none: for no one) for `reserved`; audited in
// the same transaction when an operator (`actor`) asked for it.
Result<WriteOutcome> PgLeaseStore::hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to,
                                             Millis reserved, const std::string& actor) {
  return session_.with<WriteOutcome>([&](pqxx::connection& c) -> Result<WriteOutcome> {
    pqxx::work tx{c};
    auto r = tx.exec_params(
        "UPDATE leader_lease SET released = true, lease_expires_at = now(), handover_to = nullif($4, ''),"
        " handover_until = now() + $5 * interval '1 millisecond'"
        " WHERE id = 1 AND epoch = $1 AND leader_id = $2 AND leader_incarnation = $3 AND NOT released",
        epoch.value, me.node_id, me.incarnation, to, reserved.count());
    if (r.affected_rows() != 1) {
      tx.abort();
      return WriteOutcome::fenced;
    }
    tx.exec_params("UPDATE epoch_history SET ended_at = now(), end_reason = 'released' WHERE epoch = $1", epoch.value);
    if (!actor.empty())
      tx.exec_params(
          "INSERT INTO audit_log (actor, action, subject, epoch, details) VALUES ($1, 'leader.handover',"
          " 'leader_lease', $2, jsonb_build_object('from', $3::text, 'to', $4::text))",
          actor, epoch.value, me.node_id, to);
    tx.exec_params("SELECT pg_notify($1, $2)", lease_channel, "released:" + std::to_string(epoch.value));
    tx.commit();
    return WriteOutcome::applied;
  });
}

Result<bool> PgLeaseStore::wait_for_change(Millis max) {
  return session_.with<bool>(max + std::chrono::seconds(2), [&](pqxx::connection& c) -> Result<bool> {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(max).count();
    int n = c.await_notification(static_cast<long>(us / 1'000'000), static_cast<long>(us % 1'000'000));
    return n > 0;
  });
}

Result<void> PgLeaseStore::record_node(const NodeIdentity& me, const std::string& role, Epoch leading) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    // led_epoch: the epoch it leads, else the last one it led in this
    // incarnation (schemas/0052).
    tx.exec_params(
        "INSERT INTO nodes (node_id, incarnation, endpoint, role, led_epoch) VALUES ($1, $2, $3, $4, nullif($5, 0))"
        " ON CONFLICT (node_id) DO UPDATE SET incarnation = EXCLUDED.incarnation, endpoint = EXCLUDED.endpoint,"
        " role = EXCLUDED.role, last_heartbeat_at = now(),"
        " led_epoch = CASE WHEN EXCLUDED.led_epoch IS NOT NULL THEN EXCLUDED.led_epoch"
        "  WHEN nodes.incarnation = EXCLUDED.incarnation THEN nodes.led_epoch END,"
        " started_at = CASE WHEN nodes.incarnation = EXCLUDED.incarnation THEN nodes.started_at ELSE now() END",
        me.node_id, me.incarnation, me.endpoint, role, leading.value);
    tx.commit();
    return {};
  });
}

}  // namespace baton::store::pg
