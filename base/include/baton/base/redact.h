#pragma once
// Text that may carry a credential, made safe to print: a config error, a
// log line or an API answer never echoes a password (docs/security.md).
#include <string>
#include <string_view>

namespace baton {

/// `url` with its password replaced by "***": the "user:PASSWORD@" of a
/// postgresql:// (or any scheme://) URL and every "password=VALUE" keyword
/// or query parameter. Anything else is kept, so the message still says
/// which host and database were meant.
std::string redact_url(std::string_view url);

}  // namespace baton
