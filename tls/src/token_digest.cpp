#include "baton/tls/token_digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace baton::tls {

namespace {
std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}
}  // namespace

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Length is not secret; the comparison of equal-length strings takes the
  // same time wherever they differ (OpenSSL's CRYPTO_memcmp: written so
  // that no compiler turns it into an early exit).
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool issued_token_shaped(const std::string& token) {
  if (token.size() != 6 + 64 || token.rfind("baton_", 0) != 0) return false;
  for (std::size_t i = 6; i < token.size(); ++i) {
    const char c = token[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return hex(digest, len);
}

std::string new_api_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes (OpenSSL RAND_bytes)");
  return "baton_" + hex(bytes, sizeof bytes);
}

}  // namespace baton::tls
