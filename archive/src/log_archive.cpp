#include "baton/archive/log_archive.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include "baton/leader_core/output_archive_path.h"

namespace baton::archive {

namespace fs = std::filesystem;

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

Result<void> write_at(const fs::path& file, std::int64_t offset, const std::string& data) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return make_error(Errc::io, "cannot create " + file.parent_path().string() + ": " + ec.message());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return make_error(Errc::io, "cannot open " + file.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return make_error(Errc::io, "cannot write " + file.string() + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {};
}

}  // namespace

Result<void> LogArchive::write(const std::vector<store::OutputChunk>& chunks) const {
  Result<void> first;
  for (const auto& c : chunks) {
    if (c.data.empty()) continue;
    auto r =
        write_at(fs::path(dir_) / leader_core::output_archive_file(c.run.value, c.attempt, c.stream), c.offset, c.data);
    if (!r && first) first = r;
  }
  return first;
}

std::vector<LogArchive::Stream> LogArchive::streams(std::int64_t run_id) const {
  std::vector<Stream> out;
  static const std::regex name(R"(attempt-([0-9]{1,4})\.(stdout|stderr)\.log)");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / leader_core::output_archive_ref(run_id), ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (!e.is_regular_file(ec) || !std::regex_match(file, m, name)) continue;
    out.push_back({std::stoi(m[1].str()), m[2].str(), static_cast<std::int64_t>(e.file_size(ec))});
  }
  std::sort(out.begin(), out.end(), [](const Stream& a, const Stream& b) {
    return std::tie(a.attempt, a.stream) < std::tie(b.attempt, b.stream);
  });
  return out;
}

std::optional<LogArchive::Slice> LogArchive::read(std::int64_t run_id, int attempt, std::string_view stream,
                                                  std::int64_t offset, std::size_t limit) const {
  const fs::path file = fs::path(dir_) / leader_core::output_archive_file(run_id, attempt, stream);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Slice s;
  s.offset = offset;
  s.size = static_cast<std::int64_t>(::lseek(fd, 0, SEEK_END));
  if (offset < s.size) {
    s.data.resize(static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(limit), s.size - offset)));
    std::size_t got = 0;
    while (got < s.data.size()) {
      const ssize_t n = ::pread(fd, s.data.data() + got, s.data.size() - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    s.data.resize(got);
    // Cut back to a character boundary unless this is the end: the next
    // read starts at the character this one left out.
    if (offset + static_cast<std::int64_t>(got) < s.size) {
      std::size_t k = 0;  // continuation bytes at the end
      while (k < 3 && k < got && continuation(s.data[got - 1 - k])) ++k;
      if (k < got) {
        const auto lead = static_cast<unsigned char>(s.data[got - 1 - k]);
        const std::size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (k + 1 < len) s.data.resize(got - 1 - k);
      }
    }
  }
  ::close(fd);
  return s;
}

int LogArchive::sweep(std::chrono::system_clock::duration retention) const {
  const auto cutoff =
      fs::file_time_type::clock::now() - std::chrono::duration_cast<fs::file_time_type::clock::duration>(retention);
  int removed = 0;
  std::error_code ec;
  static const std::regex number("[0-9]{1,19}");
  for (const auto& shard : fs::directory_iterator(fs::path(dir_) / "runs", ec)) {
    if (!shard.is_directory(ec) || !std::regex_match(shard.path().filename().string(), number)) continue;
    for (const auto& run : fs::directory_iterator(shard.path(), ec)) {
      if (!run.is_directory(ec) || !std::regex_match(run.path().filename().string(), number)) continue;
      auto newest = fs::file_time_type::min();
      for (const auto& f : fs::directory_iterator(run.path(), ec)) newest = std::max(newest, f.last_write_time(ec));
      if (newest >= cutoff) continue;
      if (fs::remove_all(run.path(), ec) > 0 && !ec) ++removed;
    }
    if (fs::is_empty(shard.path(), ec) && !ec) fs::remove(shard.path(), ec);
  }
  return removed;
}

}  // namespace baton::archive
