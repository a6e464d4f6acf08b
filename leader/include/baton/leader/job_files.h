#pragma once
// Job definitions from YAML files (configs/jobs/*.yaml): each file holds a
// `jobs:` list. Parsed and validated here (cron expressions included), then
// sent to the admin API by `baton ctl apply`, which validates them with the
// same reader.
#include <string>
#include <vector>

#include "baton/core/result.h"
#include "baton/store/leader_store.h"

namespace baton::leader {

/// Every *.yaml file in `dir`, in name order. The error lists every problem
/// as "FILE: jobs[i].KEY: what".
Result<std::vector<store::JobDefinition>> load_job_files(const std::string& dir);
Result<std::vector<store::JobDefinition>> load_job_file(const std::string& file);

/// One job definition as a document of the same keys as an entry of a job
/// file (YAML or JSON: the API's request body), validated the same way.
/// `name`, when given, fills a missing `name` and must agree with one given.
Result<store::JobDefinition> parse_job_document(const std::string& text, const std::string& source,
                                                const std::string& name = "");

/// The fields in which two definitions of one job differ ("schedule",
/// "tasks", ...); tasks and selectors are compared as JSON values.
std::vector<std::string> job_changes(const store::JobDefinition& from, const store::JobDefinition& to);

}  // namespace baton::leader
