#include "baton/worker_core/exit_record.h"

#include <sys/wait.h>

#include <charconv>
#include <sstream>

namespace baton::worker_core {

std::string exit_record_header(const protocol::AttemptRef& ref, bool any_exit) {
  return "run_id=" + std::to_string(ref.run_id) + " attempt=" + std::to_string(ref.attempt) +
         " lease_token=" + ref.lease_token + " any_exit=" + (any_exit ? "1" : "0") + "\n";
}

namespace {
template <class T>
bool number(const std::string& text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}
}  // namespace

std::optional<ExitRecord> parse_exit_record(const std::string& text) {
  std::istringstream in(text);
  std::string header;
  if (!std::getline(in, header) || in.eof()) {
    // The header is written whole before the task starts; without its
    // newline it is torn.
    if (text.empty() || text.back() != '\n') return std::nullopt;
  }
  ExitRecord r;
  bool run = false, attempt = false, token = false, any = false;
  std::istringstream fields(header);
  for (std::string f; fields >> f;) {
    const auto eq = f.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = f.substr(0, eq), value = f.substr(eq + 1);
    if (key == "run_id") run = number(value, r.ref.run_id) && r.ref.run_id > 0;
    if (key == "attempt") attempt = number(value, r.ref.attempt) && r.ref.attempt > 0;
    if (key == "lease_token") {
      r.ref.lease_token = value;
      token = !value.empty();
    }
    if (key == "any_exit") {
      r.any_exit = value == "1";
      any = value == "0" || value == "1";
    }
  }
  if (!run || !attempt || !token || !any) return std::nullopt;
  // The supervisor's line: the last complete one counts (there is one).
  for (std::string line; std::getline(in, line);) {
    if (in.eof() && text.back() != '\n') break;  // torn: not synced whole
    int status = 0;
    if (line.rfind("exit_status=", 0) == 0 && number(line.substr(12), status)) r.wait_status = status;
  }
  return r;
}

std::optional<protocol::Finish> finish_of(const ExitRecord& record) {
  if (!record.wait_status) return std::nullopt;
  const int status = *record.wait_status;
  protocol::Finish f;
  f.ref = record.ref;
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 9);
  const bool ok = *f.exit_code == 0 || record.any_exit;
  f.outcome = ok ? protocol::Outcome::succeeded : protocol::Outcome::failed;
  if (!ok) f.error = "exit code " + std::to_string(*f.exit_code);
  return f;
}

}  // namespace baton::worker_core
