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

namespace {

bool write_durably(const std::string& dir, const std::string& path, const std::string& body) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return false;
  // The rename is durable only once the directory is.
  if (int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return true;
}

}  // namespace

Outbox::Outbox(std::string spool_dir) : dir_(std::move(spool_dir) + "/outbox") {}

std::string Outbox::key_of(const protocol::AttemptRef& ref) {
  return std::to_string(ref.run_id) + "/" + std::to_string(ref.attempt) + "/" + ref.lease_token;
}

Result<void> Outbox::open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error(Errc::bad_config, "spool_dir: cannot create " + dir_ + ": " + ec.message());
  std::lock_guard lock(mutex_);
  entries_.clear();
  live_per_file_.clear();
  // Files hold one encoded finish per line (older versions wrote one finish
  // per *.json file: same format, one line). Oldest file first.
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".json" || ext == ".jsonl") files.emplace_back(e.last_write_time(ec), e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [t, path] : files) {
    // Keep the file's age: a finish written long ago is due for a resend.
    const auto age = fs::file_time_type::clock::now() - t;
    const MonoTime loaded_at{RealClock().mono().since_start -
                             std::chrono::duration_cast<std::chrono::nanoseconds>(age)};
    std::ifstream in(path);
    std::string line;
    int live = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto m = protocol::decode(line);
      auto* msg = std::get_if<protocol::Message>(&m);
      auto* f = msg ? std::get_if<protocol::Finish>(msg) : nullptr;
      if (!f) continue;
      auto [it, added] = entries_.try_emplace(key_of(f->ref), Entry{*f, path.string(), loaded_at, next_seq_++});
      if (added) live++;
    }
    if (live > 0)
      live_per_file_[path.string()] = live;
    else
      fs::remove(path, ec);
  }
  return {};
}

Result<void> Outbox::put_all(const std::vector<protocol::Finish>& group) {
  std::lock_guard lock(mutex_);
  std::string body;
  std::vector<const protocol::Finish*> fresh;
  for (const auto& f : group) {
    if (entries_.count(key_of(f.ref))) continue;
    body += protocol::encode(f);
    body += '\n';
    fresh.push_back(&f);
  }
  if (fresh.empty()) return {};
  const auto& first = fresh.front()->ref;
  const std::string path = dir_ + "/" + std::to_string(first.run_id) + "-" + std::to_string(first.attempt) + "-" +
                           std::to_string(next_seq_) + "-" + std::to_string(fresh.size()) + ".jsonl";
  if (!write_durably(dir_, path, body)) return make_error(Errc::bad_input, "outbox: cannot write " + path);
  const MonoTime now = RealClock().mono();
  for (const auto* f : fresh) entries_.emplace(key_of(f->ref), Entry{*f, path, now, next_seq_++});
  live_per_file_[path] = static_cast<int>(fresh.size());
  return {};
}

void Outbox::remove(const protocol::AttemptRef& ref) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key_of(ref));
  if (it == entries_.end()) return;
  const std::string file = it->second.file;
  entries_.erase(it);
  if (auto f = live_per_file_.find(file); f != live_per_file_.end() && --f->second <= 0) {
    live_per_file_.erase(f);
    std::error_code ec;
    fs::remove(file, ec);
  }
}

std::vector<protocol::Finish> Outbox::pending(std::chrono::seconds min_age) const {
  std::lock_guard lock(mutex_);
  const MonoTime now = RealClock().mono();
  std::vector<const Entry*> found;
  for (const auto& [k, e] : entries_)
    if (min_age.count() == 0 || now - e.written >= min_age) found.push_back(&e);
  std::sort(found.begin(), found.end(), [](const Entry* a, const Entry* b) { return a->seq < b->seq; });
  std::vector<protocol::Finish> out;
  for (const auto* e : found) out.push_back(e->finish);
  return out;
}

std::size_t Outbox::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
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
