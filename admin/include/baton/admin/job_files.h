#pragma once
// A job definition as the admin API receives it: one entry of a job file
// (configs/jobs/*.yaml, a `jobs:` list that `baton ctl apply` sends entry by
// entry), parsed and validated here, cron expression included.
#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "baton/base/result.h"
#include "baton/store/leader_store.h"

namespace baton::admin {

/// One job definition as a document of the same keys as an entry of a job
/// file (YAML or JSON: the API's request body). The error lists every
/// problem as "SOURCE: KEY: what".
/// `name`, when given, fills a missing `name` and must agree with one given.
Result<store::JobDefinition> parse_job_document(const std::string& text, const std::string& source,
                                                const std::string& name = "");

/// A stored definition as a job file's entry (job_document.cpp): what
/// parse_job_document reads back into the same definition (no change for
/// job_changes), keys at their defaults left out. `ctl jobs export`.
boost::json::object job_document(const store::JobDefinition& job);

/// The fields in which two definitions of one job differ ("schedule",
/// "tasks", ...); tasks and selectors are compared as JSON values.
std::vector<std::string> job_changes(const store::JobDefinition& from, const store::JobDefinition& to);

}  // namespace baton::admin
