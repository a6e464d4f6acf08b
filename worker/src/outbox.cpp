#include "baton/worker/outbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "baton/core/clock.h"
#include "baton/protocol/codec.h"

namespace baton::worker {

namespace fs = std::filesystem;

Outbox::Outbox(std::string spool_dir) : dir_(std::move(spool_dir) + "/outbox") {}

Result<void> Outbox::open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error(Errc::bad_config, "spool_dir: cannot create " + dir_ + ": " + ec.message());
  return {};
}

std::string Outbox::path_for(const protocol::AttemptRef& ref) const {
  std::string token;
  for (char c : ref.lease_token)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') token += c;
  return dir_ + "/" + std::to_string(ref.run_id) + "-" + std::to_string(ref.attempt) + "-" + token + ".json";
}

Result<void> Outbox::put(const protocol::Finish& f) {
  const std::string path = path_for(f.ref);
  const std::string tmp = path + ".tmp";
  const std::string body = protocol::encode(f);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(Errc::bad_input, "outbox: cannot write " + tmp);
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(Errc::bad_input, "outbox: cannot write " + path);
  if (int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return {};
}

void Outbox::remove(const protocol::AttemptRef& ref) {
  std::error_code ec;
  fs::remove(path_for(ref), ec);
}

std::vector<protocol::Finish> Outbox::pending(std::chrono::seconds min_age) const {
  std::vector<std::pair<fs::file_time_type, protocol::Finish>> found;
  std::error_code ec;
  const auto newest = fs::file_time_type::clock::now() - min_age;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json") continue;
    if (min_age.count() > 0 && e.last_write_time(ec) > newest) continue;
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    auto m = protocol::decode(s.str());
    if (auto* msg = std::get_if<protocol::Message>(&m))
      if (auto* f = std::get_if<protocol::Finish>(msg)) found.emplace_back(e.last_write_time(ec), *f);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<protocol::Finish> out;
  for (auto& [t, f] : found) out.push_back(std::move(f));
  return out;
}

void Journal::record(const char* event, const protocol::AttemptRef& ref, int pid) {
  using namespace std::chrono;
  auto mono = RealClock().mono().since_start.count();
  auto wall = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  std::lock_guard lock(mutex_);
  std::ofstream out(path_, std::ios::app);
  out << event << " run=" << ref.run_id << " attempt=" << ref.attempt << " token=" << ref.lease_token << " pid=" << pid
      << " mono_ns=" << mono << " wall_us=" << wall << '\n';
  out.flush();
}

}  // namespace baton::worker
