#pragma once
// Where the log archive keeps an attempt's output, relative to the node's
// log_archive_dir (docs/scheduling.md, "Output and the log archive"). Pure:
// the leader records a run's log_ref with it and every node finds the files
// with it, whichever node wrote them.
//
//   runs/<run_id / 1000>/<run_id>/attempt-<n>.<stream>.log
//
// A thousand runs per directory keeps directories small at millions of runs.
#include <cstdint>
#include <string>
#include <string_view>

namespace baton::leader_core {

/// The run's directory: what job_runs.log_ref holds.
inline std::string output_archive_ref(std::int64_t run_id) {
  return "runs/" + std::to_string(run_id / 1000) + "/" + std::to_string(run_id);
}

/// One stream of one attempt, inside the run's directory.
inline std::string output_archive_file(std::int64_t run_id, int attempt, std::string_view stream) {
  return output_archive_ref(run_id) + "/attempt-" + std::to_string(attempt) + "." + std::string(stream) + ".log";
}

}  // namespace baton::leader_core
