// The receipts' anchors on PostgreSQL (docs/assurance.md, "Anchors"): the
// heads a leader marks each sweep (logged, for an operator to keep), the
// export of every head and checkpoint, and the check of the chains against
// anchors kept outside the database. The chains themselves are append-only
// for the nodes' role (schemas/0049); what these pin is a rewrite by
// someone who can get past that (the tables' owner, a superuser), and cuts
// made by shortening retention first.
#include <spdlog/spdlog.h>

#include "baton/store_pg/pg_verify_store.h"
#include "pg_array.h"

namespace baton::store::pg {

Result<std::vector<ReceiptAnchor>> PgVerifyStore::mark_receipt_heads() {
  auto heads =
      session_.with<std::vector<ReceiptAnchor>>([&](pqxx::connection& c) -> Result<std::vector<ReceiptAnchor>> {
        pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
        const std::int64_t through = tx.exec1("SELECT coalesce(max(id), 0) FROM audit_log")[0].as<std::int64_t>();
        const std::int64_t after = audit_marked_through_ < 0 ? through - 10000 : audit_marked_through_;
        // The audit lanes by the entries written since (an index range of
        // audit_log's key), then their heads.
        std::vector<ReceiptAnchor> out;
        for (const auto& r : tx.exec_params(
                 "SELECT h.kind, h.epoch, h.lane, h.seq, encode(h.hash, 'hex') FROM receipt_heads h"
                 " WHERE (h.kind = 'runs' AND h.epoch = (SELECT epoch FROM leader_lease WHERE id = 1))"
                 "  OR (h.kind = 'audit' AND h.epoch = 0 AND h.lane IN (SELECT DISTINCT receipt_lane FROM audit_log"
                 "   WHERE id > $1 AND id <= $2 AND receipt_lane IS NOT NULL))"
                 " ORDER BY h.kind DESC, h.epoch, h.lane",
                 after, through))
          out.push_back(ReceiptAnchor{r[0].as<std::string>(), r[1].as<std::int64_t>(), r[2].as<std::string>(),
                                      r[3].as<std::int64_t>(), r[4].as<std::string>(), 0});
        tx.commit();
        audit_marked_through_ = through;
        return out;
      });
  if (!heads) return heads.error();
  std::vector<ReceiptAnchor> moved;
  for (auto& h : *heads) {
    auto& last = marked_[{h.kind, h.epoch, h.lane}];
    if (last == h.seq) continue;
    last = h.seq;
    spdlog::info("{}", anchor_line(h));
    moved.push_back(std::move(h));
  }
  return moved;
}

Result<std::vector<ReceiptAnchor>> PgVerifyStore::receipt_anchors() {
  return session_.with<std::vector<ReceiptAnchor>>([&](pqxx::connection& c) -> Result<std::vector<ReceiptAnchor>> {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    std::vector<ReceiptAnchor> out;
    // The checkpoint's digest as the electing node logs it
    // (pg_lease_store.cpp): the sha256 of the JSON's text.
    for (const auto& r :
         tx.exec("SELECT kind, epoch, lane, seq, encode(hash, 'hex') FROM receipt_heads"
                 " UNION ALL SELECT 'checkpoint', epoch, '', 0, encode(sha256(convert_to(receipts::text, 'UTF8')),"
                 " 'hex') FROM epoch_history WHERE receipts IS NOT NULL"
                 " ORDER BY 1 DESC, 2, 3"))
      out.push_back(ReceiptAnchor{r[0].as<std::string>(), r[1].as<std::int64_t>(), r[2].as<std::string>(),
                                  r[3].as<std::int64_t>(), r[4].as<std::string>(), 0});
    tx.commit();
    return out;
  });
}

Result<AnchorsReport> PgVerifyStore::check_anchors(const std::vector<ReceiptAnchor>& kept, int limit, Millis deadline) {
  std::vector<std::string> kinds, lanes, hashes;
  std::vector<std::int64_t> epochs, seqs, lines;
  for (const auto& a : kept) {
    kinds.push_back(a.kind);
    epochs.push_back(a.epoch);
    lanes.push_back(a.lane);
    seqs.push_back(a.seq);
    hashes.push_back(a.hash);
    lines.push_back(a.line);
  }
  return session_.with<AnchorsReport>(deadline + Millis{5000}, [&](pqxx::connection& c) -> Result<AnchorsReport> {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    tx.exec_params("SELECT set_config('statement_timeout', $1, true)", std::to_string(deadline.count()));
    AnchorsReport out;
    out.checked = static_cast<std::int64_t>(kept.size());
    // Each kept anchor beside what it names: the link (or retention's
    // anchor, where the link was cut), the audit entry, the checkpoint.
    // Joins, not a look-up per anchor: audit entries are found by their
    // lane and place, which no index serves, so one pass over the log.
    static const std::string sql =
        "WITH k AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[],"
        "  $6::bigint[]) AS k(kind, epoch, lane, seq, hash, line)),"
        " judged AS (SELECT k.kind, k.epoch, k.lane, k.seq, k.line, CASE"
        "  WHEN k.kind = 'runs' AND l.seq IS NOT NULL AND encode(l.hash, 'hex') <> k.hash"
        "   THEN 'its hash is ' || left(encode(l.hash, 'hex'), 16) || '..., the anchor kept on line ' || k.line"
        "    || ' says ' || left(k.hash, 16) || '...: the chain was rewritten up to here'"
        "  WHEN k.kind = 'runs' AND l.seq IS NULL AND a.seq = k.seq AND encode(a.hash, 'hex') <> k.hash"
        "   THEN 'retention cut the chain here with hash ' || left(encode(a.hash, 'hex'), 16)"
        "    || '..., the anchor kept on line ' || k.line || ' says ' || left(k.hash, 16) || '...'"
        "  WHEN k.kind = 'runs' AND l.seq IS NULL AND (a.seq IS NULL OR a.seq < k.seq)"
        "   THEN 'the link is gone (retention did not cut it), though the anchor kept on line ' || k.line"
        "    || ' says the chain had it: the chain was cut'"
        "  WHEN k.kind = 'audit' AND x.id IS NULL"
        "   THEN 'the entry is gone, though the anchor kept on line ' || k.line || ' says the chain had it'"
        "  WHEN k.kind = 'audit' AND encode(x.receipt_hash, 'hex') <> k.hash"
        "   THEN 'its hash is ' || left(encode(x.receipt_hash, 'hex'), 16) || '..., the anchor kept on line '"
        "    || k.line || ' says ' || left(k.hash, 16) || '...: the chain was rewritten up to here'"
        "  WHEN k.kind = 'checkpoint' AND e.epoch IS NULL"
        "   THEN 'the epoch is gone, though the anchor kept on line ' || k.line || ' records its checkpoint'"
        "  WHEN k.kind = 'checkpoint' AND e.receipts IS NULL"
        "   THEN 'it has no checkpoint, though the anchor kept on line ' || k.line || ' records one'"
        "  WHEN k.kind = 'checkpoint' AND encode(sha256(convert_to(e.receipts::text, 'UTF8')), 'hex') <> k.hash"
        "   THEN 'its checkpoint''s sha256 is ' || left(encode(sha256(convert_to(e.receipts::text, 'UTF8')),"
        "    'hex'), 16) || '..., the anchor kept on line ' || k.line || ' says ' || left(k.hash, 16)"
        "    || '...: the checkpoint was rewritten'"
        "  END AS problem"
        "  FROM k"
        "  LEFT JOIN receipt_links l ON k.kind = 'runs' AND l.epoch = k.epoch AND l.lane = k.lane AND l.seq = k.seq"
        "  LEFT JOIN receipt_anchors a ON k.kind = 'runs' AND a.epoch = k.epoch AND a.lane = k.lane"
        "  LEFT JOIN audit_log x ON k.kind = 'audit' AND x.receipt_lane = k.lane AND x.receipt_seq = k.seq"
        "  LEFT JOIN epoch_history e ON k.kind = 'checkpoint' AND e.epoch = k.epoch)"
        " SELECT kind, epoch, lane, seq, problem, count(*) OVER () FROM judged WHERE problem IS NOT NULL"
        " ORDER BY line, kind, epoch, lane, seq LIMIT $7";
    for (const auto& r : tx.exec_params(sql, pg_array(kinds), pg_array(epochs), pg_array(lanes), pg_array(seqs),
                                        pg_array(hashes), pg_array(lines), limit)) {
      out.problems.push_back(ReceiptProblem{r[0].as<std::string>(), r[1].as<std::int64_t>(), r[2].as<std::string>(),
                                            r[3].as<std::int64_t>(), r[4].as<std::string>()});
      out.problems_total = r[5].as<std::int64_t>();
    }
    tx.commit();
    return out;
  });
}

}  // namespace baton::store::pg
