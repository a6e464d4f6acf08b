#pragma once
// The process_* series every Prometheus client library exports (the names
// and units of the "process" collector), and baton_build_info: what this
// binary is. Read from /proc at each scrape.
#include <cstdint>
#include <optional>
#include <string>

namespace baton::service {

struct ProcessStats {
  double cpu_seconds = 0;           ///< user + system
  std::int64_t resident_bytes = 0;  ///< resident set size
  std::int64_t virtual_bytes = 0;
  std::int64_t open_fds = 0;
  std::int64_t max_fds = 0;       ///< the soft limit
  double start_time_seconds = 0;  ///< since the Unix epoch
};

/// This process's, or nullopt where /proc cannot be read.
std::optional<ProcessStats> read_process_stats();

/// process_cpu_seconds_total, process_resident_memory_bytes,
/// process_virtual_memory_bytes, process_open_fds, process_max_fds,
/// process_start_time_seconds.
std::string render_process_metrics(const ProcessStats& s);

/// baton_build_info{version, protocol} 1.
std::string render_build_info(const std::string& version, int protocol_min, int protocol_max);

}  // namespace baton::service
