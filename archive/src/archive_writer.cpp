#include "baton/archive/archive_writer.h"

#include <spdlog/spdlog.h>

#include "baton/base/json_text.h"

namespace baton::archive {

namespace {
// A full queue or a failing disk is logged once, then every this many
// times: it fails every chunk or batch while it lasts.
constexpr std::uint64_t log_every_nth = 1000;
}  // namespace

ArchiveWriter::ArchiveWriter(const LogArchive& archive, std::size_t max_bytes)
    : archive_(archive), max_bytes_(max_bytes), thread_([this] { run(); }) {}

ArchiveWriter::~ArchiveWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ArchiveWriter::push(const std::vector<store::OutputChunk>& chunks) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& c : chunks) {
      if (queued_bytes_ + c.data.size() > max_bytes_) {
        // The disk does not keep up (or hangs): once, then every thousandth.
        if (dropped_++ % log_every_nth == 0)
          spdlog::warn("log_archive_queue_full dir={} dropped_chunks={} queued_bytes={}", json_quote(archive_.dir()),
                       dropped_, queued_bytes_);
        continue;
      }
      queued_bytes_ += c.data.size();
      queue_.push_back(c);
    }
  }
  wake_.notify_one();
}

void ArchiveWriter::flush() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

std::uint64_t ArchiveWriter::dropped_chunks() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void ArchiveWriter::run() {
  std::uint64_t failures = 0;
  for (;;) {
    std::vector<store::OutputChunk> batch;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      queued_bytes_ = 0;
      writing_ = true;
    }
    if (auto r = archive_.write(batch); !r) {
      // Once, then every thousandth: a full or gone disk fails every batch.
      if (failures++ % log_every_nth == 0)
        spdlog::warn("log_archive_write_failed dir={} chunks={} error={} failures={}", json_quote(archive_.dir()),
                     batch.size(), json_quote(r.error().message), failures);
    }
    {
      std::lock_guard lock(mutex_);
      writing_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace baton::archive
