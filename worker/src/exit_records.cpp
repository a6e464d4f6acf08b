#include "baton/worker/exit_records.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton::worker {

namespace {
std::string path_of(const std::string& dir, const protocol::AttemptRef& ref) {
  return dir + "/" + std::to_string(ref.run_id) + "-" + std::to_string(ref.attempt);
}
}  // namespace

int open_exit_record(const std::string& dir, const protocol::AttemptRef& ref, bool any_exit) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const int fd = ::open(path_of(dir, ref).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const std::string header = worker_core::exit_record_header(ref, any_exit);
  if (::write(fd, header.data(), header.size()) != static_cast<ssize_t>(header.size())) {
    ::close(fd);
    ::unlink(path_of(dir, ref).c_str());
    return -1;
  }
  return fd;
}

void forget_exit_record(const std::string& dir, const protocol::AttemptRef& ref) {
  ::unlink(path_of(dir, ref).c_str());
}

std::vector<worker_core::ExitRecord> read_exit_records(const std::string& dir) {
  std::vector<worker_core::ExitRecord> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    if (auto r = worker_core::parse_exit_record(text.str())) out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace baton::worker
