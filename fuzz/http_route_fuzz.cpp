// libFuzzer target: what the admin API parses of a request before any
// handler runs (admin/src/admin_http.cpp): the target's path, percent-
// decoded, matched against route patterns of every shape; its query, checked
// against a route's parameters and read as paging and integers; the path
// parameters as ids and names; the body as a JSON object within its limit.
// The input: the target on the first line, the body after it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "../admin/src/admin_http.h"

namespace {

// Routes of /api/v1 of every shape: fixed, a parameter last, a parameter
// between fixed segments, fixed segments that another route's parameter
// would also match (dead-letters/replay, dead-letters/{id}).
const std::vector<std::string> patterns = {
    "/api/v1/jobs",
    "/api/v1/jobs/{name}",
    "/api/v1/jobs/{name}/trigger",
    "/api/v1/runs/{id}",
    "/api/v1/runs/{id}/output",
    "/api/v1/workers/{worker}/drain",
    "/api/v1/dead-letters/replay",
    "/api/v1/dead-letters/{id}/replay",
    "/api/v1/settings/{key}",
};
const std::vector<std::string> query_names = {"limit", "cursor", "job", "state", "worker", "after", "follow"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace baton::admin::admin_http;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto eol = input.find('\n');
  const std::string target = input.substr(0, eol);
  const std::string body = eol == std::string::npos ? "" : input.substr(eol + 1);

  auto segments = path_segments(target);
  if (auto* s = std::get_if<std::vector<std::string>>(&segments)) {
    for (const auto& pattern : patterns) {
      auto params = match_pattern(pattern, *s);
      if (!params) continue;
      for (const auto& [name, value] : *params) {
        (void)parse_id(value);
        (void)valid_name(value);
      }
    }
  }
  std::map<std::string, std::string> query;
  if (!query_of(target, query_names, query)) {
    Paging ids, names;
    (void)paging_of(query, true, ids);
    (void)paging_of(query, false, names);
    std::optional<std::int64_t> after;
    (void)int_param(query, "after", 0, INT64_MAX, after);
  }
  std::map<std::string, std::string> none;
  (void)query_of(target, {}, none);
  baton::HttpRequest request{"POST", target, {}, body};
  (void)body_object(request, 4096);
  (void)to_leader(request, "https", "n2.example:8443");
  return 0;
}
