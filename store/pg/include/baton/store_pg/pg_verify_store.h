#pragma once
// VerifyStore on PostgreSQL (schemas/0040, docs/assurance.md): a slice of
// the database's records read in one repeatable-read snapshot, and a
// sweep's record in one transaction; the receipts' checks and anchors
// (schemas/0042, 0045, 0049; pg_receipt_anchors.cpp).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "baton/store/verify_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

class PgVerifyStore final : public VerifyStore {
 public:
  PgVerifyStore(const std::string& url, const std::string& application_name);
  Result<VerifyCursor> verify_cursor() override;
  Result<RecordedSlice> recorded_slice(const VerifyCursor& after, Millis settle, int limit, bool running_now) override;
  Result<SweepRecorded> record_sweep(const SweepRecord& sweep) override;
  /// This epoch's chains of run ends and the audit log's chains written
  /// since the last call (the last 10,000 entries' on the first), each
  /// logged as a `receipts_head` line when it moved since this store last
  /// logged it.
  Result<std::vector<ReceiptAnchor>> mark_receipt_heads() override;

  /// Recomputes every chain of receipts from the rows, in one snapshot:
  /// `baton verify --receipts`. At most `limit` problems are listed. The
  /// pass reads every receipt kept (retention's days of them), so it gets
  /// `deadline` (client side and as its statement_timeout) instead of a
  /// call's 10 s and a statement's 30 s: about 8 us of database time an
  /// end, 10 s was a million ends (docs/assurance.md, "Receipts").
  Result<ReceiptsReport> check_receipts(int limit, Millis deadline = default_receipts_deadline);
  static constexpr Millis default_receipts_deadline{std::chrono::minutes(30)};
  /// Every chain's head and every epoch's checkpoint as they stand, in one
  /// snapshot: `baton verify --receipts --export-anchors`.
  Result<std::vector<ReceiptAnchor>> receipt_anchors();
  /// The chains and checkpoints against anchors an operator kept: a link
  /// (an audit entry, a checkpoint) whose hash is not what was kept, or
  /// that is gone though retention did not cut it. At most `limit` listed.
  Result<AnchorsReport> check_anchors(const std::vector<ReceiptAnchor>& kept, int limit,
                                      Millis deadline = default_receipts_deadline);

 private:
  PgSession session_;
  /// What mark_receipt_heads last logged of each chain (kind, epoch, lane).
  std::map<std::tuple<std::string, std::int64_t, std::string>, std::int64_t> marked_;
  std::int64_t audit_marked_through_ = -1;  ///< the last audit entry seen; -1: none yet
};

}  // namespace baton::store::pg
