#pragma once
// Internal to the admin API (admin_api.cpp, admin_handlers.cpp): JSON
// answers, the checked query parameters, and cursor paging.
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "baton/base/http_message.h"
#include "baton/store/admin_store.h"

namespace baton::admin::admin_http {

namespace json = boost::json;

HttpResponse error(int status, const std::string& code, const std::string& message);
HttpResponse ok_json(const json::value& v, int status = 200);
/// An AdminResult that did not apply, as its HTTP error (404, 409, 503).
HttpResponse refused(const store::AdminResult& r);
/// A database error as its answer: 400 for bad input, 503 `reads_busy`
/// with Retry-After for a busy read connection (an error whose message
/// starts with reads_busy_prefix: AdminApi::with_reads), else 503
/// `db_unavailable`.
HttpResponse db_error(const Error& e);
inline constexpr std::string_view reads_busy_prefix = "reads_busy: ";

std::optional<std::int64_t> parse_id(std::string_view s);
bool valid_name(std::string_view s);

/// The path segments of a request target, percent-decoded, or why the
/// target is not a URL path.
std::variant<std::vector<std::string>, std::string> path_segments(const std::string& target);
/// A route pattern ("/api/v1/runs/{id}") against a target's segments: its
/// path parameters by name when every segment matches, else nothing.
std::optional<std::map<std::string, std::string>> match_pattern(std::string_view pattern,
                                                                const std::vector<std::string>& segments);

/// The query parameters of `target`, decoded; an error names what is wrong
/// (malformed, repeated, or not one of `allowed`).
std::optional<std::string> query_of(const std::string& target, const std::vector<std::string>& allowed,
                                    std::map<std::string, std::string>& out);
/// An integer parameter in [lo, hi], or an error naming it.
std::optional<std::string> int_param(const std::map<std::string, std::string>& q, const std::string& name,
                                     std::int64_t lo, std::int64_t hi, std::optional<std::int64_t>& out);
std::optional<std::string> text_param(const std::map<std::string, std::string>& q, const std::string& name);

/// A list's page: `limit` (1-500, default 50) and its cursor, an id
/// (`numeric`) or a name.
struct Paging {
  int limit = 50;
  std::optional<std::int64_t> before_id;
  std::optional<std::string> after_name;
};
std::optional<std::string> paging_of(const std::map<std::string, std::string>& q, bool numeric, Paging& out);
/// `{"items": [...], "next_cursor": "..." | null}`, or the database's error.
HttpResponse page_or_error(const Result<store::Page>& page);
/// The first item of a one-item page, or 404 naming `what`.
HttpResponse one_or_404(const Result<store::Page>& page, const std::string& what);

/// The request body as a JSON object (at most `max_bytes`), or the error
/// answer naming what is wrong with it.
std::variant<json::object, HttpResponse> body_object(const HttpRequest& r, std::size_t max_bytes = 64 * 1024);

/// 307 to the leader (or 503 when none is known).
HttpResponse to_leader(const HttpRequest& r, const std::string& scheme, const std::string& leader_endpoint);

}  // namespace baton::admin::admin_http
