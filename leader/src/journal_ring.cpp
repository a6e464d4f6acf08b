#include "baton/leader/journal_ring.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

#include "baton/base/json_text.h"

namespace baton::leader {
namespace fs = std::filesystem;

namespace {

/// The writer's rounds: at most this far behind the loop, or this much.
constexpr std::chrono::milliseconds write_every{100};
constexpr std::size_t wake_bytes = 1u << 20;

struct RingFile {
  std::uint64_t seq = 0;
  std::int64_t epoch = 0;
  fs::path path;
};

/// "000000000042-e7.jsonl" -> {42, 7}.
std::optional<RingFile> ring_file(const fs::path& p) {
  const std::string name = p.filename().string();
  unsigned long long seq = 0;
  long long epoch = 0;
  char tail[8] = {};
  if (std::sscanf(name.c_str(), "%12llu-e%lld.%5s", &seq, &epoch, tail) != 3 || std::string(tail) != "jsonl")
    return std::nullopt;
  return RingFile{seq, epoch, p};
}

std::vector<RingFile> ring_files(const fs::path& dir) {
  std::vector<RingFile> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (auto f = ring_file(e.path())) files.push_back(*f);
  std::sort(files.begin(), files.end(), [](const RingFile& a, const RingFile& b) { return a.seq < b.seq; });
  return files;
}

/// The wall clock of a line: BookRecorder writes "k" then "w" first.
std::optional<std::int64_t> wall_of(const std::string& line) {
  const auto at = line.find(",\"w\":");
  if (at == std::string::npos || at > 64) return std::nullopt;
  return std::strtoll(line.c_str() + at + 5, nullptr, 10);
}

bool is_header(const std::string& line) { return line.rfind("{\"k\":\"book\"", 0) == 0; }

}  // namespace

JournalRing::JournalRing(fs::path dir, std::int64_t max_bytes, std::chrono::hours max_age, std::size_t queued_max)
    : dir_(std::move(dir)),
      max_bytes_(max_bytes),
      max_age_(max_age),
      file_bytes_(std::max<std::int64_t>(max_bytes / 16, 64 * 1024)),
      queued_max_(queued_max) {
  // The books hold task output, run parameters and the inputs of every
  // decision: the node's user alone reads them (security review N-L3).
  std::error_code ec;
  fs::create_directories(dir_, ec);
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace, ec);
  for (const auto& f : ring_files(dir_)) next_seq_ = std::max(next_seq_, f.seq + 1);
  thread_ = std::thread([this] { run(); });
}

JournalRing::~JournalRing() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (file_) std::fclose(file_);
}

namespace {
/// The sink of one book: its lines, tagged with its epoch.
class BookLines final : public journal::LineSink {
 public:
  BookLines(JournalRing& ring, Epoch epoch) : ring_(ring), epoch_(epoch) {}
  void line(std::string text) override { ring_.line(epoch_, std::move(text)); }

 private:
  JournalRing& ring_;
  const Epoch epoch_;
};
}  // namespace

std::unique_ptr<journal::LineSink> JournalRing::begin_book(Epoch epoch) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Item{{}, epoch, true});
    queued_total_++;
  }
  wake_.notify_one();
  return std::make_unique<BookLines>(*this, epoch);
}

void JournalRing::line(Epoch epoch, std::string text) {
  {
    std::lock_guard lock(mutex_);
    if (queued_bytes_ + text.size() > queued_max_) {
      dropped_[epoch.value]++;
      return;
    }
    if (auto d = dropped_.find(epoch.value); d != dropped_.end()) {
      // Said where it happened: a replay skips the rest of this book
      // instead of diverging.
      queue_.push_back(Item{"{\"k\":\"gap\",\"w\":0,\"lost\":" + std::to_string(d->second) + "}", epoch, false});
      queued_total_++;
      dropped_.erase(d);
    }
    queued_bytes_ += text.size();
    queue_.push_back(Item{std::move(text), epoch, false});
    queued_total_++;
    // No wake-up per line (a futex and a context switch each, on the
    // control loop's thread): the writer comes by every write_every, or
    // sooner when a good deal waits.
    if (queued_bytes_ < wake_bytes) return;
  }
  wake_.notify_one();
}

void JournalRing::flush() {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = queued_total_;  // not "until idle": a busy loop may never let it be
  flushing_++;
  wake_.notify_one();
  idle_.wait(lock, [&] { return written_total_ >= target; });
  flushing_--;
}

void JournalRing::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Not "a flush waits" alone: with nothing queued that would hold the
    // lock in a spin, and neither flush() nor the loop could take it.
    wake_.wait_for(lock, write_every,
                   [&] { return stop_ || queued_bytes_ >= wake_bytes || (flushing_ > 0 && !queue_.empty()); });
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    std::deque<Item> batch;
    batch.swap(queue_);
    queued_bytes_ = 0;
    lock.unlock();
    for (const auto& item : batch) write(item);
    if (file_) std::fflush(file_);
    lock.lock();
    written_total_ += batch.size();
    idle_.notify_all();
  }
}

void JournalRing::write(const Item& item) {
  if (item.begins) {
    if (broken_ == item.epoch) broken_ = Epoch{0};
    return open_next(item.epoch);
  }
  // A line of another book than the file's (a retiring loop's, beside the
  // next epoch's), or past the file's size: a file of its book follows.
  if (!file_ || epoch_ != item.epoch || file_written_ >= file_bytes_) {
    open_next(item.epoch);
    // The lines of this book since a write failed are lost: said where,
    // so a replay skips the rest of it instead of feeding the core a hole.
    if (file_ && broken_ == item.epoch) {
      const std::string gap = "{\"k\":\"gap\",\"w\":0,\"lost\":0}\n";
      std::fwrite(gap.data(), 1, gap.size(), file_);
      broken_ = Epoch{0};
    }
  }
  if (!file_) {
    broken_ = item.epoch;
    return;
  }
  if (std::fwrite(item.text.data(), 1, item.text.size(), file_) != item.text.size() || std::fputc('\n', file_) == EOF) {
    spdlog::warn("incident_journal_write_failed dir={} epoch={}", json_quote(dir_.string()), epoch_.value);
    std::fclose(file_);
    file_ = nullptr;
    broken_ = item.epoch;
    return;
  }
  file_written_ += static_cast<std::int64_t>(item.text.size()) + 1;
}

void JournalRing::open_next(Epoch epoch) {
  if (file_) std::fclose(file_);
  epoch_ = epoch;
  char name[64];
  std::snprintf(name, sizeof name, "%012llu-e%lld.jsonl", static_cast<unsigned long long>(next_seq_++),
                static_cast<long long>(epoch.value));
  // A new file of its own, 0600, never through a link planted in its place.
  const int fd = ::open((dir_ / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  file_ = fd < 0 ? nullptr : ::fdopen(fd, "w");
  if (fd >= 0 && !file_) ::close(fd);
  file_written_ = 0;
  if (!file_) spdlog::warn("incident_journal_open_failed dir={} epoch={}", json_quote(dir_.string()), epoch.value);
  trim();
}

void JournalRing::trim() {
  std::lock_guard files(files_);
  auto all = ring_files(dir_);
  std::int64_t total = 0;
  std::vector<std::int64_t> sizes;
  for (const auto& f : all) {
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(fs::file_size(f.path, ec));
    sizes.push_back(ec ? 0 : size);
    total += sizes.back();
  }
  // Oldest first, never the file just opened (the last): past the bound,
  // and past the age its lines may be kept (incident_journal_max_days:
  // they hold task output and parameters, security review N-L3).
  const auto too_old = fs::file_time_type::clock::now() - max_age_;
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    std::error_code ec;
    const bool expired = max_age_.count() > 0 && fs::last_write_time(all[i].path, ec) < too_old && !ec;
    if (total <= max_bytes_ && !expired) break;
    fs::remove(all[i].path, ec);
    total -= sizes[i];
  }
}

Result<std::string> JournalRing::export_window(std::int64_t from_ms, std::int64_t to_ms) {
  if (from_ms > to_ms) return make_error(Errc::bad_input, "from is after to");
  flush();
  std::lock_guard files(files_);
  // Two reads of the files, so that an export holds what it returns and
  // no more (security review N-L3: it held the whole ring besides): the
  // first finds each book's files and the times it spans, the second
  // copies the books that overlap the window.
  struct Book {
    std::int64_t epoch = 0;
    bool has_header = false;
    std::vector<fs::path> files;
    std::optional<std::int64_t> first, last;  ///< wall times of its lines
  };
  // Each epoch's files in order, wherever another book's files fell
  // between them; its first must begin with its header.
  std::vector<Book> books;
  std::map<std::int64_t, std::size_t> by_epoch;
  for (const auto& f : ring_files(dir_)) {
    std::ifstream in(f.path);
    std::string text;
    Book* book = nullptr;
    while (std::getline(in, text)) {
      if (in.eof()) break;  // a line still being written
      if (!book) {
        if (is_header(text) || !by_epoch.count(f.epoch)) {
          by_epoch[f.epoch] = books.size();
          books.push_back(Book{f.epoch, is_header(text), {}, {}, {}});
        }
        book = &books[by_epoch[f.epoch]];
        book->files.push_back(f.path);
      }
      if (auto w = wall_of(text); w && *w > 0) {
        if (!book->first) book->first = w;
        book->last = w;
      }
    }
  }
  std::string out =
      "{\"k\":\"window\",\"from_ms\":" + std::to_string(from_ms) + ",\"to_ms\":" + std::to_string(to_ms) + "}\n";
  int exported = 0;
  for (const auto& b : books) {
    if (!b.first || *b.first > to_ms || *b.last < from_ms) continue;
    if (!b.has_header)
      return make_error(Errc::bad_input, "the journal of epoch " + std::to_string(b.epoch) +
                                             " no longer holds its beginning (the ring kept the newest " +
                                             std::to_string(max_bytes_ >> 20) +
                                             " MiB, incident_journal_max_mb): it cannot be replayed");
    bool past_window = false;
    for (const auto& path : b.files) {
      std::ifstream in(path);
      for (std::string l; !past_window && std::getline(in, l);) {
        if (in.eof()) break;  // a line still being written
        if (auto w = wall_of(l); w && *w > to_ms) {
          past_window = true;
          break;
        }
        out += l;
        out += '\n';
        if (static_cast<std::int64_t>(out.size()) > max_bytes_)
          return make_error(Errc::bad_input, "the export is larger than the ring's bound; ask for a shorter window");
      }
      if (past_window) break;
    }
    exported++;
  }
  if (exported == 0)
    return make_error(Errc::bad_input,
                      "no book of this node's journal overlaps the window (this node led no epoch "
                      "then, or the ring no longer holds it)");
  return out;
}

}  // namespace baton::leader
