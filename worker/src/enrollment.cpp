#include "baton/worker/enrollment.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <cstring>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "baton/base/json_text.h"
#include "baton/worker/coordinator_probe.h"

namespace baton::worker {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::optional<fs::file_time_type> stamp(const std::string& path) {
  std::error_code ec;
  auto t = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

std::optional<std::string> read_trimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Result<void> write_private_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(Errc::io, "cannot create '" + tmp + "': " + std::strerror(errno));
  const std::string line = text + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return make_error(Errc::io, "cannot write '" + path + "': " + std::strerror(errno));
  }
  return {};
}

bool Enrollment::due() const {
  if (!enabled()) return false;
  const auto bootstrap = stamp(cfg_.enrollment_token_path);
  const auto credential = stamp(cfg_.credential_path);
  if (!credential) return true;
  return bootstrap && *bootstrap > *credential && bootstrap != tried_;
}

Result<std::string> Enrollment::credential(Millis timeout) {
  if (due()) {
    auto made = enroll(timeout);
    if (made) return made;
    if (!stamp(cfg_.credential_path)) return made.error();
    // With a credential in hand, this version of the file is not tried
    // again (an attached worker would otherwise reconnect every check).
    tried_ = stamp(cfg_.enrollment_token_path);
    spdlog::error(
        "worker_enrollment_failed worker={} error={} (the current credential stays in use; write the file again "
        "to retry)",
        json_quote(cfg_.worker_id), json_quote(made.error().message));
  }
  auto text = read_trimmed(cfg_.credential_path);
  if (!text || text->empty())
    return make_error(Errc::io, "cannot read the worker credential '" + cfg_.credential_path + "'");
  return *text;
}

Result<std::string> Enrollment::enroll(Millis timeout) {
  const auto bootstrap_stamp = stamp(cfg_.enrollment_token_path);
  auto bootstrap = read_trimmed(cfg_.enrollment_token_path);
  if (!bootstrap || bootstrap->empty())
    return make_error(Errc::io, "cannot read enrollment_token_file '" + cfg_.enrollment_token_path + "'");
  const std::string body = json::serialize(json::object{{"worker_id", cfg_.worker_id}});
  std::string failures;
  for (const auto& ep : cfg_.coordinators) {
    auto reply =
        ask_coordinator(cfg_, ep, "POST", "/api/v1/enroll", {{"Authorization", "Bearer " + *bootstrap}}, body, timeout);
    if (!reply) {
      failures += (failures.empty() ? "" : "; ") + ep + ": " + reply.error().message;
      continue;
    }
    boost::system::error_code ec;
    auto answer = json::parse(reply->body, ec);
    const json::object* o = ec ? nullptr : answer.if_object();
    if (reply->status == 401 || reply->status == 403) {
      // The same database behind every node: another one would say the same.
      tried_ = bootstrap_stamp;
      const json::value* message = o ? o->if_contains("message") : nullptr;
      return make_error(Errc::bad_config, "the bootstrap token in '" + cfg_.enrollment_token_path + "' was refused: " +
                                              (message && message->is_string() ? std::string(message->as_string())
                                                                               : reply->body.substr(0, 200)));
    }
    const json::value* credential = o ? o->if_contains("credential") : nullptr;
    if (reply->status != 201 || !credential || !credential->is_string()) {
      failures += (failures.empty() ? "" : "; ") + ep + ": answered " + std::to_string(reply->status);
      continue;
    }
    const std::string token(credential->as_string());
    if (auto w = write_private_file(cfg_.credential_path, token); !w) return w.error();
    tried_ = bootstrap_stamp;
    spdlog::info("worker_enrolled worker={} coordinator={} credential_file={}", json_quote(cfg_.worker_id), ep,
                 json_quote(cfg_.credential_path));
    return token;
  }
  return make_error(Errc::io, "no coordinator took the enrollment: " + failures);
}

}  // namespace baton::worker
