#pragma once
// Internal to store/pg: the fenced statements that write job_runs, defined in
// run_transitions.cpp (the transitions) and run_triggers.cpp (the API's
// triggers), and used by the stores of this folder.
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "baton/store/run_store.h"

namespace baton::store::pg {

/// $1 epoch, $2 stale_after ms, $3 ids, $4 versions, $5 workers, $6 attempts, $7 tokens.
/// Returns one row per written run (current_epoch, id, new version), or one
/// row with NULL id when nothing was written.
const std::string& heartbeat_batch_sql();
/// A run of a job, created by an API trigger, with its audit entry: $1 epoch,
/// $2 job name, $3 idempotency key, $4 trigger kind, $5 slot (unix seconds or
/// NULL), $6 payload (JSON, NULL for {}), $7 the actor audited. Returns
/// (current_epoch, new run id or NULL, job exists, the earlier run the
/// idempotency key names or NULL) followed by the new run's
/// due_run_columns, NULL unless it may be assigned now.
const std::string& trigger_run_sql();
/// The batch of PgAdminStore::trigger_batch: one statement.
const std::string& trigger_batch_sql();
/// How long an API submission's idempotency key is remembered after its run
/// finished (an SQL interval).
inline constexpr const char* idempotency_key_remembered = "24 hours";
/// A subquery: the run the idempotency key `key` (SQL) names among the runs
/// of job `job` (SQL, its id), unfinished or finished within
/// idempotency_key_remembered, or NULL. The API's trigger, its batch and
/// the leader's SQL submissions judge keys alike.
std::string run_named_by_key(const std::string& key, const std::string& job);
/// A subquery: why a trigger by `owner` (SQL: an API token's name, or
/// 'sql:<role>') storing `payload` (SQL jsonb) may not have the run its key
/// names (schemas/0048, security review N3): another caller submitted it,
/// or it was submitted with other parameters. NULL when it may, or when the
/// key names no run. Every such refusal starts with key_refusal_prefix
/// (admin_store.h).
std::string key_refusal(const std::string& key, const std::string& job, const std::string& owner,
                        const std::string& payload);
/// A subquery: the sorted names (never the values: a value may be a
/// secret) of the parameters in the payload `payload` (SQL jsonb), for the
/// audit log.
std::string parameter_names(const std::string& payload);

/// Classifies the (current_epoch, new run id or NULL) row of a fenced insert.
CreateResult classify_create(const pqxx::row& r, Epoch writer);

/// A prepared statement of the run store: its name and its text.
struct Statement {
  const char* name;
  std::string sql;
};
/// Every fenced statement that writes job_runs, prepared on each of the run
/// store's connections (pg_run_store.cpp).
const std::vector<Statement>& statements();
/// A fenced write's (current_epoch, id or NULL, version, lease token,
/// attempt) row: Applied, or Conflict at the writer's epoch, or Fenced.
WriteResult classify(const pqxx::row& r, Epoch writer);
/// The rows of a batched write, one per run written.
BatchWriteResult classify_batch(const pqxx::result& rows, Epoch writer);

}  // namespace baton::store::pg
