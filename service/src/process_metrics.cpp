#include "baton/service/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace baton::service {

std::optional<ProcessStats> read_process_stats() {
  ProcessStats s;
  std::ifstream stat_file("/proc/self/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: the
  // fields are counted from the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string x; fields >> x;) f.push_back(x);
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const long page = ::sysconf(_SC_PAGESIZE);
  s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime, stime (fields 14, 15)
  s.virtual_bytes = std::stoll(f[20]);                            // vsize (field 23)
  s.resident_bytes = std::stoll(f[21]) * page;                    // rss in pages (field 24)
  const double started_ticks = std::stod(f[19]);                  // starttime (field 22), since boot
  std::ifstream proc_stat("/proc/stat");
  for (std::string l; std::getline(proc_stat, l);)
    if (l.rfind("btime ", 0) == 0) s.start_time_seconds = std::stod(l.substr(6)) + started_ticks / ticks;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++s.open_fds;
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0) s.max_fds = static_cast<std::int64_t>(r.rlim_cur);
  return s;
}

std::string render_process_metrics(const ProcessStats& s) {
  std::ostringstream o;
  o.precision(15);
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << value << '\n';
  };
  one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", s.cpu_seconds);
  one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", s.resident_bytes);
  one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", s.virtual_bytes);
  one("process_open_fds", "gauge", "Number of open file descriptors.", s.open_fds);
  one("process_max_fds", "gauge", "Maximum number of open file descriptors.", s.max_fds);
  one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
      s.start_time_seconds);
  return o.str();
}

std::string render_build_info(const std::string& version, int protocol_min, int protocol_max) {
  return "# HELP baton_build_info The version of this binary and the worker protocol versions it speaks (always 1).\n"
         "# TYPE baton_build_info gauge\nbaton_build_info{version=\"" +
         version + "\",protocol=\"" + std::to_string(protocol_min) + "-" + std::to_string(protocol_max) + "\"} 1\n";
}

}  // namespace baton::service
