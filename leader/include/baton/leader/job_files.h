#pragma once
// Job definitions from YAML files (configs/jobs/*.yaml): each file holds a
// `jobs:` list. Parsed and validated here (cron expressions included), then
// upserted into job_definitions by the node at start.
#include <string>
#include <vector>

#include "baton/core/result.h"
#include "baton/store/leader_store.h"

namespace baton::leader {

/// Every *.yaml file in `dir`, in name order. The error lists every problem
/// as "FILE: jobs[i].KEY: what".
Result<std::vector<store::JobDefinition>> load_job_files(const std::string& dir);
Result<std::vector<store::JobDefinition>> load_job_file(const std::string& file);

}  // namespace baton::leader
