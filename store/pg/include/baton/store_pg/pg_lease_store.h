#pragma once
// LeaseStore on PostgreSQL. The election takes FOR UPDATE on the lease row
// (a plain UPDATE would take only FOR NO KEY UPDATE, which does not conflict
// with the FOR KEY SHARE that fenced run writes hold), so an election waits
// for every in-flight write of the old epoch and every later write of the old
// epoch sees the new one. See docs/fencing.md.
#include <string>

#include "baton/store/lease_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

inline constexpr const char* lease_channel = "baton_leader";

class PgLeaseStore final : public LeaseStore {
 public:
  PgLeaseStore(const std::string& url, const std::string& application_name);

  Result<LeaseView> observe() override;
  Result<CampaignResult> campaign(const NodeIdentity& me, Millis lease) override;
  Result<WriteOutcome> renew(Epoch epoch, const NodeIdentity& me, Millis lease) override;
  Result<WriteOutcome> release(Epoch epoch, const NodeIdentity& me) override;
  Result<WriteOutcome> hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to, Millis reserved,
                                 const std::string& actor) override;
  Result<bool> wait_for_change(Millis max) override;
  Result<void> record_node(const NodeIdentity& me, const std::string& role, Epoch leading) override;

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
