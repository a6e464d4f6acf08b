// The admin API's worker identity routes (docs/security.md, "Worker
// identity"): an operator grants a worker id labels and capacity and gets a
// bootstrap token for it; the worker trades that token for a credential of
// its own (POST /api/v1/enroll, authenticated by the bootstrap token alone).
// Tokens are made here and only their hashes reach the store.
#include <spdlog/spdlog.h>

#include "admin_http.h"
#include "baton/admin/admin_api.h"
#include "baton/base/ids.h"
#include "baton/base/json_text.h"

namespace baton::admin {

using namespace admin_http;

namespace {

constexpr std::int64_t ttl_min_seconds = 60, ttl_max_seconds = 30 * 24 * 3600, ttl_default_seconds = 3600;
constexpr std::size_t labels_max = 64, label_text_max = 200;

std::optional<std::string> bad_worker_id(const std::string& id) {
  if (id.empty() || id.size() > 200) return "a worker id is 1-200 characters";
  if (!id_alphabet(id)) return "a worker id holds only letters, digits, '-', '_' and '.'";
  return std::nullopt;
}

/// `ttl_seconds` of a body, or its default; an error names what is wrong.
std::optional<std::string> ttl_of(const json::object& o, std::int64_t& out) {
  out = ttl_default_seconds;
  auto* v = o.if_contains("ttl_seconds");
  if (!v) return std::nullopt;
  if (!v->is_int64() || v->as_int64() < ttl_min_seconds || v->as_int64() > ttl_max_seconds)
    return "'ttl_seconds' must be a whole number of seconds from " + std::to_string(ttl_min_seconds) + " to " +
           std::to_string(ttl_max_seconds);
  out = v->as_int64();
  return std::nullopt;
}

/// The bootstrap token's answer: the grant, and the token shown this once.
HttpResponse with_token(const store::AdminResult& r, const std::string& token) {
  auto out = json::parse(r.json).as_object();
  out["token"] = token;
  return ok_json(out, 201);
}

}  // namespace

HttpResponse AdminApi::create_worker_enrollment(const ApiCall& c) {
  store::WorkerGrant grant;
  grant.worker_id = c.param("worker");
  if (auto bad = bad_worker_id(grant.worker_id)) return error(400, "bad_request", *bad);
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  for (const auto& kv : o)
    if (kv.key() != "capacity" && kv.key() != "labels" && kv.key() != "ttl_seconds")
      return error(400, "bad_request",
                   "unknown field " + json_quote(std::string(kv.key()).substr(0, 64)) +
                       " (the body takes capacity, labels, ttl_seconds)");
  auto* capacity = o.if_contains("capacity");
  if (!capacity || !capacity->is_int64() || capacity->as_int64() < 0 || capacity->as_int64() > 10000)
    return error(400, "bad_request", "'capacity' (required) must be a whole number from 0 to 10000");
  grant.capacity = static_cast<int>(capacity->as_int64());
  if (auto* labels = o.if_contains("labels")) {
    if (!labels->is_object()) return error(400, "bad_request", "'labels' must be an object of strings");
    if (labels->as_object().size() > labels_max)
      return error(400, "bad_request", "at most " + std::to_string(labels_max) + " labels");
    for (const auto& kv : labels->as_object()) {
      if (!kv.value().is_string() || kv.key().empty() || kv.key().size() > label_text_max ||
          kv.value().as_string().size() > label_text_max)
        return error(400, "bad_request",
                     "label " + json_quote(std::string(kv.key()).substr(0, 64)) +
                         " must be a string of at most 200 characters, with a name of 1-200");
      grant.labels[std::string(kv.key())] = std::string(kv.value().as_string());
    }
  }
  if (auto bad = ttl_of(o, grant.ttl_seconds)) return error(400, "bad_request", *bad);
  const std::string token = new_api_token();
  auto r = with_store([&](auto& s) { return s.create_worker_enrollment(c.actor(), grant, sha256_hex(token)); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  spdlog::info("worker_enrollment_created worker={} capacity={} ttl_seconds={} by={}", json_quote(grant.worker_id),
               grant.capacity, grant.ttl_seconds, json_quote(c.who.name));
  return with_token(*r, token);
}

HttpResponse AdminApi::rotate_worker_credential(const ApiCall& c) {
  const auto& worker = c.param("worker");
  if (auto bad = bad_worker_id(worker)) return error(400, "bad_request", *bad);
  json::object o;
  if (!c.request.body.empty()) {
    auto body = body_object(c.request);
    if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
    o = std::get<json::object>(body);
    if (o.size() > 1 || (o.size() == 1 && !o.contains("ttl_seconds")))
      return error(400, "bad_request", "the body takes only ttl_seconds");
  }
  std::int64_t ttl = 0;
  if (auto bad = ttl_of(o, ttl)) return error(400, "bad_request", *bad);
  const std::string token = new_api_token();
  auto r = with_store([&](auto& s) { return s.rotate_worker_credential(c.actor(), worker, ttl, sha256_hex(token)); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  spdlog::info("worker_rotation_started worker={} ttl_seconds={} by={}", json_quote(worker), ttl,
               json_quote(c.who.name));
  return with_token(*r, token);
}

HttpResponse AdminApi::revoke_worker_credentials(const ApiCall& c) {
  const auto& worker = c.param("worker");
  if (auto bad = bad_worker_id(worker)) return error(400, "bad_request", *bad);
  auto r = with_store([&](auto& s) { return s.revoke_worker_credentials(c.actor(), worker); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  spdlog::warn("worker_credentials_revoked worker={} by={}", json_quote(worker), json_quote(c.who.name));
  return ok_json(json::parse(r->json));
}

HttpResponse AdminApi::list_worker_credentials(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_reads([&](auto& s) { return s.list_worker_credentials(page.limit, page.before_id); }));
}

HttpResponse AdminApi::enroll_worker(const ApiCall& c) {
  auto header = c.request.headers.find("authorization");
  const std::string bearer = bearer_credentials(header == c.request.headers.end() ? "" : header->second);
  if (bearer.empty() || bearer.size() > 200)
    return error(401, "unauthenticated", "enrollment needs 'Authorization: Bearer <bootstrap token>'");
  // Every bootstrap token is issued (new_api_token): one of another shape
  // was never made, and is refused without a hash or a lookup.
  if (!issued_token_shaped(bearer))
    return error(401, "unauthenticated", "that is not a bootstrap token (baton_ and 64 hex digits)");
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  auto* id = o.if_contains("worker_id");
  if (o.size() != 1 || !id || !id->is_string())
    return error(400, "bad_request", "the body must be {\"worker_id\": \"...\"}");
  const std::string worker(id->as_string());
  if (auto bad = bad_worker_id(worker)) return error(400, "bad_request", *bad);
  const std::string credential = new_api_token();
  auto r = with_store([&](auto& s) { return s.enroll_worker(sha256_hex(bearer), worker, sha256_hex(credential)); });
  // The caller is not authenticated yet: the database's error is not its business.
  if (!r) return credentials_unavailable(r.error());
  if (r->outcome != store::EnrollOutcome::enrolled) {
    spdlog::warn("worker_enrollment_refused worker={} reason={}", json_quote(worker), json_quote(r->message));
    // The holder of a token learns why it no longer works (expired, used):
    // that says nothing it could not guess, and saves an operator a search.
    if (r->outcome == store::EnrollOutcome::other_worker) return error(403, "forbidden", r->message);
    return error(401, "unauthenticated", r->message);
  }
  spdlog::info("worker_enrolled worker={}", json_quote(worker));
  auto out = json::parse(r->json).as_object();
  out["credential"] = credential;
  return ok_json(out, 201);
}

}  // namespace baton::admin
