#pragma once
// AdminStore on PostgreSQL: the admin API's reads (built as JSON by the
// database) and its audited mutations, each one transaction.
#include <string>

#include "baton/store/admin_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

class PgAdminStore final : public AdminStore {
 public:
  PgAdminStore(const std::string& url, const std::string& application_name);
  /// Calls cut off after `d` (PgSession): the node's admin API uses a short
  /// one so /status answers while the database does not.
  void set_call_deadline(Millis d) { session_.set_call_deadline(d); }

  Result<RunCounts> run_counts() override;
  Result<std::int64_t> database_epoch() override;
  Result<ClusterGauges> cluster_gauges() override;
  Result<std::optional<std::string>> run_json(RunId id) override;
  Result<std::optional<std::string>> slot_decisions(const std::string& job, std::int64_t slot_unix) override;
  Result<std::optional<std::string>> job_stats(const std::string& job) override;
  Result<Page> list_events(int limit, std::optional<std::int64_t> before_id, std::optional<std::string> kind) override;
  Result<AdminResult> post_event(const Actor& who, const std::string& kind, const std::string& payload_json,
                                 const std::optional<std::string>& dedupe_key) override;
  Result<Page> list_runs(const RunQuery& q) override;
  // Run statistics over time (pg_run_stats.cpp, schemas/0039).
  Result<std::optional<std::string>> run_series(const SeriesQuery& q) override;
  Result<int> roll_up_run_stats(int max_minutes) override;
  // The history checker's state and its acknowledgement (pg_verify_store.cpp).
  Result<std::string> verify_status_json(int limit, bool open_only) override;
  Result<std::int64_t> acknowledge_violations(const Actor& who, std::int64_t through_id) override;
  Result<std::optional<std::string>> run_state(RunId id) override;
  Result<Page> list_epochs(int limit, std::optional<std::int64_t> before_epoch) override;
  Result<Page> list_nodes(int limit, std::optional<std::string> after_id) override;
  Result<Page> list_workers(int limit, std::optional<std::string> after_id, std::optional<std::string> only) override;
  Result<JobPage> list_jobs(int limit, std::optional<std::string> after_name, std::optional<std::string> only) override;
  Result<std::optional<StoredJob>> job_definition(const std::string& name) override;
  Result<Page> list_dead_letters(int limit, std::optional<std::int64_t> before_id,
                                 std::optional<std::string> triage_status, std::optional<std::int64_t> only) override;
  Result<Page> list_audit(int limit, std::optional<std::int64_t> before_id,
                          std::optional<std::string> subject) override;
  Result<std::string> settings_json() override;
  Result<Page> list_tokens(int limit, std::optional<std::int64_t> before_id) override;

  Result<std::optional<TokenGrant>> token_by_hash(const std::string& sha256_hex) override;

  // Worker identity (pg_worker_identity.cpp).
  Result<Page> list_worker_credentials(int limit, std::optional<std::int64_t> before_id) override;
  Result<std::optional<WorkerCredential>> worker_credential_by_hash(const std::string& sha256_hex) override;
  Result<std::vector<std::int64_t>> recently_revoked_worker_credentials(int within_seconds) override;
  Result<EnrollResult> enroll_worker(const std::string& bootstrap_sha256, const std::string& worker_id,
                                     const std::string& credential_sha256) override;
  Result<AdminResult> create_worker_enrollment(const Actor& who, const WorkerGrant& grant,
                                               const std::string& sha256_hex) override;
  Result<AdminResult> rotate_worker_credential(const Actor& who, const std::string& worker_id, std::int64_t ttl_seconds,
                                               const std::string& sha256_hex) override;
  Result<AdminResult> revoke_worker_credentials(const Actor& who, const std::string& worker_id) override;

  Result<Triggered> trigger(const Actor& who, const std::string& job, const std::optional<std::string>& idempotency_key,
                            const std::optional<std::string>& payload_json,
                            const TriggerOptions& options = {}) override;
  Result<BatchTriggered> trigger_batch(const Actor& who, const std::vector<TriggerItem>& items) override;
  Result<AdminResult> rerun(const Actor& who, RunId of) override;
  Result<std::vector<AdminResult>> replay(const Actor& who, const std::vector<std::int64_t>& ids) override;
  Result<AdminResult> triage(const Actor& who, std::int64_t dead_letter, const std::string& status,
                             const std::optional<std::string>& notes) override;
  Result<AdminResult> set_job_paused(const Actor& who, const std::string& name, bool paused) override;
  Result<AdminResult> create_job(const Actor& who, const JobDefinition& job) override;
  Result<AdminResult> update_job(const Actor& who, const JobWrite& w) override;
  Result<AdminResult> delete_job(const Actor& who, const std::string& name,
                                 std::optional<std::int64_t> expected_version) override;
  Result<AdminResult> set_worker_admin_state(const Actor& who, const std::string& worker,
                                             const std::string& state) override;
  Result<AdminResult> set_setting(const Actor& who, const std::string& key, const std::string& value_json) override;
  Result<AdminResult> create_token(const Actor& who, const std::string& name, const std::string& role,
                                   const std::string& sha256_hex,
                                   std::optional<std::int64_t> ttl_seconds = std::nullopt) override;
  Result<AdminResult> revoke_token(const Actor& who, std::int64_t id) override;
  Result<void> audit(const Actor& who, const std::string& action, const std::string& subject,
                     const std::string& details_json) override;

  // Webhooks (pg_webhooks.cpp).
  Result<Page> list_webhooks(int limit, std::optional<std::string> after_name,
                             std::optional<std::string> only) override;
  Result<std::optional<StoredWebhook>> webhook_definition(const std::string& name) override;
  Result<AdminResult> put_webhook(const Actor& who, const WebhookDefinition& w) override;
  Result<AdminResult> delete_webhook(const Actor& who, const std::string& name) override;
  Result<std::optional<Page>> list_webhook_deliveries(const std::string& webhook, std::optional<std::string> state,
                                                      int limit, std::optional<std::int64_t> before_id) override;
  Result<AdminResult> redeliver(const Actor& who, std::int64_t delivery) override;
  Result<AdminResult> ping_webhook(const Actor& who, const std::string& name) override;

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
