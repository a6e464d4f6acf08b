#pragma once
// The shape and the digest of the tokens Baton issues (API tokens and
// worker credentials alike): made here, in the room that links OpenSSL, so
// the admin API and the node's worker admission use one spelling of them
// without either including the other.
#include <string>

namespace baton::tls {

/// Lower-case hex SHA-256 of `text` (what the database keeps of a token).
std::string sha256_hex(const std::string& text);
/// A new token: "baton_" and 64 hex digits from the system's CSPRNG.
std::string new_api_token();
/// Whether `token` has the shape new_api_token() gives (and worker
/// credentials have): "baton_" and 64 lower-case hex digits. Anything else
/// was never issued, so it is refused without hashing or a lookup.
bool issued_token_shaped(const std::string& token);
/// Equal, in a time that does not depend on where equal-length strings
/// differ (the length is not secret).
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace baton::tls
