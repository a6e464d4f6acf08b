#pragma once
// VerifyStore on PostgreSQL (schemas/0040, docs/assurance.md): a slice of
// the database's records read in one repeatable-read snapshot, and a
// sweep's record in one transaction.
#include <string>

#include "baton/store/verify_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

class PgVerifyStore final : public VerifyStore {
 public:
  PgVerifyStore(const std::string& url, const std::string& application_name);
  Result<VerifyCursor> verify_cursor() override;
  Result<RecordedSlice> recorded_slice(const VerifyCursor& after, Millis settle, int limit, bool running_now) override;
  Result<SweepRecorded> record_sweep(const SweepRecord& sweep) override;
  /// Recomputes every chain of receipts from the rows, in one snapshot:
  /// `baton verify --receipts`. At most `limit` problems are listed. The
  /// pass reads every receipt kept (retention's days of them), so it gets
  /// `deadline` (client side and as its statement_timeout) instead of a
  /// call's 10 s and a statement's 30 s: about 8 us of database time an
  /// end, 10 s was a million ends (docs/assurance.md, "Receipts").
  Result<ReceiptsReport> check_receipts(int limit, Millis deadline = default_receipts_deadline);
  static constexpr Millis default_receipts_deadline{std::chrono::minutes(30)};

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
