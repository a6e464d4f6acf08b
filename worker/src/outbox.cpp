#include "baton/worker/outbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "baton/base/clock.h"
#include "baton/base/json_text.h"
#include "baton/protocol/codec.h"

namespace baton::worker {

namespace fs = std::filesystem;

namespace {

// A log is closed for appends past this size; it is deleted once all of its
// finishes are acknowledged.
constexpr std::size_t log_rotate_bytes = 4 << 20;

bool write_all(int fd, const std::string& body) {
  std::size_t done = 0;
  while (done < body.size()) {
    ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string ack_line(const std::string& key) {
  boost::json::object o;
  o["ack"] = key;
  return boost::json::serialize(o) + "\n";
}

std::uint64_t log_number(const fs::path& p) {
  const std::string stem = p.stem().string();  // log-N
  if (stem.rfind("log-", 0) != 0) return 0;
  try {
    return std::stoull(stem.substr(4));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

Outbox::Outbox(std::string spool_dir, const Clock& clock) : dir_(std::move(spool_dir) + "/outbox"), clock_(clock) {}

Outbox::~Outbox() {
  if (log_fd_ >= 0) ::close(log_fd_);
}

std::string Outbox::key_of(const protocol::AttemptRef& ref) {
  return std::to_string(ref.run_id) + "/" + std::to_string(ref.attempt) + "/" + ref.lease_token;
}

bool Outbox::open_next_log() {
  if (log_fd_ >= 0) ::close(log_fd_);
  const std::string previous = log_path_;
  log_path_ = dir_ + "/log-" + std::to_string(next_log_++) + ".jsonl";
  log_fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  log_bytes_ = 0;
  if (log_fd_ < 0) return false;
  // The new file's directory entry must be durable before a finish in it is.
  if (int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  if (!previous.empty()) retire_if_done(previous);
  return true;
}

void Outbox::retire_if_done(const std::string& file) {
  if (file == log_path_) return;  // still appended to
  {
    std::lock_guard lock(mutex_);
    auto it = live_per_file_.find(file);
    if (it != live_per_file_.end() && it->second > 0) return;
    if (it != live_per_file_.end()) live_per_file_.erase(it);
  }
  std::error_code ec;
  fs::remove(file, ec);
}

void Outbox::quarantine(const std::string& file, const std::string& line, const std::string& why) {
  quarantined_++;
  spdlog::error("outbox_record_quarantined file={} bytes={} error={}", file, line.size(), json_quote(why));
  if (int fd = ::open((dir_ + "/quarantine.txt").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600); fd >= 0) {
    (void)write_all(fd, file + "\t" + line + "\n");
    ::close(fd);
  }
}

Result<void> Outbox::open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error(Errc::bad_config, "spool_dir: cannot create " + dir_ + ": " + ec.message());
  // The spool holds finishes with task output, lease tokens and the journal:
  // private to the worker's user, whatever the umask made of it. Only a
  // directory of the worker's own is made so (security review L14): not
  // one reached through a link, another user's, or a shared one like /tmp,
  // whose mode this would have taken from everyone else.
  for (const fs::path& d : {fs::path(dir_).parent_path(), fs::path(dir_)}) {
    struct stat st {};
    if (::lstat(d.c_str(), &st) != 0)
      return make_error(Errc::bad_config, "spool_dir: cannot read " + d.string() + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode))
      return make_error(Errc::bad_config, "spool_dir: " + d.string() +
                                              " is not a directory (a symbolic link is not followed): name the "
                                              "directory itself");
    if (st.st_uid != ::geteuid())
      return make_error(Errc::bad_config, "spool_dir: " + d.string() + " belongs to uid " + std::to_string(st.st_uid) +
                                              ", not to this worker's user (uid " + std::to_string(::geteuid()) +
                                              "): name a directory the worker owns");
    if (st.st_mode & S_ISVTX)
      return make_error(Errc::bad_config, "spool_dir: " + d.string() +
                                              " is a shared directory (sticky bit, like /tmp): name a directory of the "
                                              "worker's own under it");
    fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return make_error(Errc::bad_config, "spool_dir: cannot make " + d.string() + " private: " + ec.message());
  }
  // Called before any other thread uses the outbox; the file lock is enough
  // (retire_if_done takes the index lock itself).
  std::lock_guard io(io_mutex_);
  entries_.clear();
  live_per_file_.clear();
  // Replay: legacy one-finish files first (oldest first), then the logs in
  // order, so an ack always follows the finish it acknowledges.
  std::vector<std::pair<fs::file_time_type, fs::path>> legacy;
  std::vector<std::pair<std::uint64_t, fs::path>> logs;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".json") legacy.emplace_back(e.last_write_time(ec), e.path());
    if (e.path().extension() == ".jsonl" && log_number(e.path()) > 0) logs.emplace_back(log_number(e.path()), e.path());
  }
  std::sort(legacy.begin(), legacy.end());
  std::sort(logs.begin(), logs.end());
  std::vector<fs::path> files;
  for (auto& [t, p] : legacy) files.push_back(p);
  for (auto& [n, p] : logs) {
    files.push_back(p);
    next_log_ = std::max(next_log_, n + 1);
  }
  for (const auto& path : files) {
    // Keep the file's age: a finish written long ago is due for a resend.
    const auto age = fs::file_time_type::clock::now() - fs::last_write_time(path, ec);
    const MonoTime written{clock_.mono().since_start - std::chrono::duration_cast<std::chrono::nanoseconds>(age)};
    std::ifstream in(path);
    std::string line;
    live_per_file_[path.string()] += 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line.rfind("{\"ack\":", 0) == 0) {
        boost::system::error_code jec;
        auto v = boost::json::parse(line, jec);
        if (jec || !v.is_object() || !v.as_object().contains("ack") || !v.as_object().at("ack").is_string()) continue;
        auto it = entries_.find(std::string(v.as_object().at("ack").as_string()));
        if (it == entries_.end()) continue;
        live_per_file_[it->second.file]--;
        entries_.erase(it);
        continue;
      }
      auto m = protocol::decode(line);
      auto* msg = std::get_if<protocol::Message>(&m);
      auto* f = msg ? std::get_if<protocol::Finish>(msg) : nullptr;
      if (!f) {
        // A torn line (a crash or a failed write mid-append) or a record
        // this version cannot read: kept aside with an error, never dropped
        // silently and never allowed to block the records after it.
        quarantine(path.string(), line,
                   std::holds_alternative<protocol::DecodeError>(m) ? std::get<protocol::DecodeError>(m).message
                                                                    : "not a finish");
        continue;
      }
      if (entries_.try_emplace(key_of(f->ref), Entry{*f, path.string(), written, next_seq_++}).second)
        live_per_file_[path.string()]++;
    }
  }
  for (const auto& path : files) retire_if_done(path.string());
  if (!open_next_log()) return make_error(Errc::bad_config, "outbox: cannot create a log in " + dir_);
  return {};
}

Result<void> Outbox::put_all(const std::vector<protocol::Finish>& group) {
  // io_mutex_ serialises the file; mutex_ guards only the in-memory index
  // and is never held across a write or an fsync, so pending() and size()
  // (the network thread) never wait for a stalled disk.
  std::lock_guard io(io_mutex_);
  if (log_fd_ < 0) return make_error(Errc::bad_input, "outbox: not open");
  std::string body;
  std::vector<const protocol::Finish*> fresh;
  {
    std::lock_guard lock(mutex_);
    for (const auto& f : group) {
      if (entries_.count(key_of(f.ref))) continue;
      body += protocol::encode(f);
      body += '\n';
      fresh.push_back(&f);
    }
  }
  if (fresh.empty()) return {};
  if (!write_all(log_fd_, body) || ::fdatasync(log_fd_) != 0) {
    const std::string why = std::strerror(errno);
    // Cut a partial append back off, so the next record starts on a line
    // of its own instead of continuing a torn one.
    (void)!::ftruncate(log_fd_, static_cast<off_t>(log_bytes_));
    return make_error(Errc::bad_input, "outbox: cannot write " + log_path_ + ": " + why);
  }
  log_bytes_ += body.size();
  const MonoTime now = clock_.mono();
  {
    std::lock_guard lock(mutex_);
    for (const auto* f : fresh) entries_.emplace(key_of(f->ref), Entry{*f, log_path_, now, next_seq_++});
    live_per_file_[log_path_] += static_cast<int>(fresh.size());
  }
  if (log_bytes_ > log_rotate_bytes && !open_next_log())
    return make_error(Errc::bad_input, "outbox: cannot create a log in " + dir_);
  return {};
}

void Outbox::remove_all(const std::vector<protocol::AttemptRef>& refs) {
  std::lock_guard io(io_mutex_);
  std::string lines;
  std::set<std::string> files;
  {
    std::lock_guard lock(mutex_);
    for (const auto& ref : refs) {
      auto it = entries_.find(key_of(ref));
      if (it == entries_.end()) continue;
      files.insert(it->second.file);
      lines += ack_line(it->first);
      if (auto f = live_per_file_.find(it->second.file); f != live_per_file_.end()) f->second--;
      entries_.erase(it);
    }
  }
  // Appended at once but not synced: a lost ack costs one harmless replay.
  // One write for every ack of the group (one per ack was a system call per
  // run in the throughput phase).
  if (log_fd_ >= 0 && !lines.empty()) {
    if (write_all(log_fd_, lines))
      log_bytes_ += lines.size();
    else
      (void)!::ftruncate(log_fd_, static_cast<off_t>(log_bytes_));
  }
  for (const auto& file : files) retire_if_done(file);
}

std::vector<protocol::Finish> Outbox::pending(std::chrono::seconds min_age) const {
  std::lock_guard lock(mutex_);
  const MonoTime now = clock_.mono();
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

OutboxWriter::OutboxWriter(Outbox& outbox, Durable on_durable)
    : outbox_(outbox), on_durable_(std::move(on_durable)), thread_([this] { run(); }) {}

OutboxWriter::~OutboxWriter() { drain_and_stop(); }

void OutboxWriter::push(protocol::Finish f) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(f));
  }
  wake_.notify_one();
}

void OutboxWriter::ack(protocol::AttemptRef ref) {
  {
    std::lock_guard lock(mutex_);
    acks_.push_back(std::move(ref));
  }
  wake_.notify_one();
}

void OutboxWriter::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty() || !acks_.empty(); });
    std::vector<protocol::Finish> group;
    std::vector<protocol::AttemptRef> acks;
    group.swap(queue_);
    acks.swap(acks_);
    lock.unlock();
    if (!acks.empty()) outbox_.remove_all(acks);
    if (!group.empty()) {
      auto written = outbox_.put_all(group);
      on_durable_(std::move(group), std::move(written));
    }
    lock.lock();
  }
}

void OutboxWriter::drain_and_stop() {
  {
    std::lock_guard lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::vector<protocol::Finish> rest;
  std::vector<protocol::AttemptRef> acks;
  {
    std::lock_guard lock(mutex_);
    rest.swap(queue_);
    acks.swap(acks_);
  }
  if (!acks.empty()) outbox_.remove_all(acks);
  if (!rest.empty()) {
    auto written = outbox_.put_all(rest);
    on_durable_(std::move(rest), std::move(written));
  }
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
