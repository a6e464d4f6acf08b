#pragma once
// A webhook as its document says it (PUT /api/v1/webhooks/{name}, and the
// `webhooks:` list of the files `baton ctl apply` reads; docs/webhooks.md):
// checked key by key, every problem named, as a job document is. Numbers
// and booleans may come as JSON values or as their text (ctl sends YAML
// scalars as text).
#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "baton/base/result.h"
#include "baton/store/webhooks.h"

namespace baton::admin {

/// The webhook `name` as `doc` describes it. An absent or empty secret is
/// allowed here (an update keeps the stored one); the caller refuses a
/// creation without one. Errors: one line per problem, "body: KEY: ...".
Result<store::WebhookDefinition> parse_webhook_document(const boost::json::object& doc, const std::string& name);

/// Which keys differ between a stored webhook and a new definition
/// ("secret" when a secret is given whose SHA-256 is not the stored one).
std::vector<std::string> webhook_changes(const store::StoredWebhook& stored, const store::WebhookDefinition& w);

}  // namespace baton::admin
