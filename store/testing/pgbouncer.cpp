#include "baton/store_testing/pgbouncer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "baton/testing/child_process.h"

namespace baton::testing {

namespace {
const std::string script = std::string(BATON_SOURCE_DIR) + "/scripts/pgbouncer-private ";
}

PgBouncer::PgBouncer(const std::string& url, const std::string& mode) {
  char tmpl[] = "/tmp/baton-pgbouncer-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
  parent_ = tmpl;
  ::chmod(parent_.c_str(), 0755);  // pgbouncer runs as postgres when the tests run as root
  const std::string out = command_stdout(script + "start " + parent_ + "/pgb '" + url + "' " + mode + " 2>&1");
  // The URL is the last line; anything before it is what went wrong.
  const auto last = out.rfind('\n');
  const std::string tail = last == std::string::npos ? out : out.substr(last + 1);
  if (tail.rfind("postgresql://", 0) == 0)
    url_ = tail;
  else
    error_ = out;
}

PgBouncer::~PgBouncer() {
  command_stdout(script + "stop " + parent_ + "/pgb");
  std::error_code ignored;
  std::filesystem::remove_all(parent_, ignored);
}

}  // namespace baton::testing
