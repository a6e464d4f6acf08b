#pragma once
// Internal to store/pg: fenced statements defined in run_transitions.cpp (the
// one file that writes job_runs) and used by other stores in this folder.
#include <pqxx/pqxx>
#include <string>

#include "baton/store/run_store.h"

namespace baton::store::pg {

/// $1 epoch, $2 stale_after ms, $3 ids, $4 versions, $5 workers, $6 attempts, $7 tokens.
/// Returns one row per written run (current_epoch, id, new version), or one
/// row with NULL id when nothing was written.
const std::string& heartbeat_batch_sql();
/// $1 epoch, $2 job name, $3 idempotency key, $4 trigger kind, $5 slot (unix seconds or NULL).
/// Returns (current_epoch, new run id or NULL, job exists).
/// $1 epoch, $2 job name, $3 idempotency key, $4 trigger kind, $5 slot
/// (unix seconds), $6 payload (JSON, NULL for {}).
const std::string& create_job_run_sql();

/// Classifies the (current_epoch, new run id or NULL) row of a fenced insert.
CreateResult classify_create(const pqxx::row& r, Epoch writer);

}  // namespace baton::store::pg
