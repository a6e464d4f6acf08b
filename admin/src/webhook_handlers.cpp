// The admin API's webhook routes (docs/webhooks.md): definitions written
// as jobs are (PUT with a dry run, what changed), their deliveries, a test
// delivery and a redelivery. A webhook's secret goes in and never comes out.
#include <boost/json.hpp>

#include "admin_handler_support.h"
#include "admin_http.h"
#include "baton/admin/admin_api.h"
#include "baton/admin/webhook_document.h"
#include "baton/base/json_text.h"

namespace baton::admin {

using namespace admin_http;

namespace {

/// What a token below admin is shown of webhooks (security review N-L2): a
/// URL's scheme and host, not its path or query (a capability URL carries
/// its secret there), and not the secret's digest (a weak secret could be
/// guessed from it offline, then deliveries forged).
Result<store::Page> shown_below_admin(Result<store::Page> page) {
  if (!page) return page;
  boost::system::error_code ec;
  json::value items = json::parse(page->items_json, ec);
  if (ec || !items.is_array()) return page;
  for (auto& item : items.as_array()) {
    if (!item.is_object()) continue;
    auto& o = item.as_object();
    o.erase("secret_sha256");
    if (auto* url = o.if_contains("url"); url && url->is_string()) {
      const std::string u(url->as_string());
      const std::size_t host = u.find("://");
      const std::size_t path = host == std::string::npos ? std::string::npos : u.find_first_of("/?#", host + 3);
      if (path != std::string::npos) *url = u.substr(0, path) + "/...";
    }
  }
  page->items_json = json::serialize(items);
  return page;
}

}  // namespace

HttpResponse AdminApi::list_webhooks(const ApiCall& c, bool one) {
  Paging paging;
  std::optional<std::string> only;
  if (one) {
    only = c.param("name");
    if (!valid_name(*only)) return bad_name("webhook name", *only);
  } else if (auto bad = paging_of(c.params, false, paging)) {
    return error(400, "bad_request", *bad);
  }
  auto page = with_reads([&](auto& s) { return s.list_webhooks(paging.limit, paging.after_name, only); });
  if (c.who.role != Role::admin) page = shown_below_admin(std::move(page));
  if (one) return one_or_404(page, "webhook " + json_quote(*only));
  return page_or_error(page);
}

HttpResponse AdminApi::put_webhook(const ApiCall& c) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("webhook name", name);
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto w = parse_webhook_document(std::get<json::object>(body), name);
  if (!w) return error(400, "invalid_webhook", w.error().message);
  auto dry = text_param(c.params, "dry_run");
  if (dry && *dry != "true" && *dry != "false")
    return error(400, "bad_request", "query parameter 'dry_run' must be true or false");
  auto stored = with_store([&](auto& s) { return s.webhook_definition(name); });
  if (!stored) return db_error(stored.error());
  if (!*stored && w->secret.empty())
    return error(400, "invalid_webhook", "body: secret: is required for a new webhook (16 to 1000 characters)");
  std::vector<std::string> changes;
  if (*stored) changes = webhook_changes(**stored, *w);
  const char* action = !*stored ? "create" : changes.empty() ? "unchanged" : "update";
  json::array changed;
  for (const auto& f : changes) changed.push_back(json::value(f));
  if ((dry && *dry == "true") || std::string(action) == "unchanged")
    return ok_json(json::object{{"webhook", name},
                                {"action", action},
                                {"changes", changed},
                                {"version", *stored ? json::value((*stored)->version) : json::value(nullptr)},
                                {"dry_run", dry && *dry == "true"}});
  auto r = with_store([&](auto& s) { return s.put_webhook(c.actor(), *w); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(
      json::object{{"webhook", name}, {"action", action}, {"changes", changed}, {"definition", json::parse(r->json)}},
      *stored ? 200 : 201);
}

HttpResponse AdminApi::delete_webhook(const ApiCall& c) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("webhook name", name);
  auto r = with_store([&](auto& s) { return s.delete_webhook(c.actor(), name); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::object{{"webhook", name}, {"deleted", true}, {"definition", json::parse(r->json)}});
}

HttpResponse AdminApi::list_webhook_deliveries(const ApiCall& c) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("webhook name", name);
  Paging paging;
  if (auto bad = paging_of(c.params, true, paging)) return error(400, "bad_request", *bad);
  auto state = text_param(c.params, "state");
  if (state && *state != "pending" && *state != "delivered" && *state != "failed")
    return error(
        400, "bad_request",
        "query parameter 'state' must be pending, delivered or failed, got " + json_quote(state->substr(0, 64)));
  auto page =
      with_reads([&](auto& s) { return s.list_webhook_deliveries(name, state, paging.limit, paging.before_id); });
  if (!page) return db_error(page.error());
  if (!*page) return error(404, "not_found", "no webhook " + json_quote(name));
  return page_or_error(Result<store::Page>(**page));
}

HttpResponse AdminApi::ping_webhook(const ApiCall& c) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("webhook name", name);
  auto r = with_store([&](auto& s) { return s.ping_webhook(c.actor(), name); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::parse(r->json), 201);
}

HttpResponse AdminApi::redeliver(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("delivery id", c.param("id"));
  auto r = with_store([&](auto& s) { return s.redeliver(c.actor(), *id); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::parse(r->json));
}

}  // namespace baton::admin
