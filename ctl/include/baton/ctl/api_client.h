#pragma once
// The admin API from the command line's side: one HTTP/1.1 request per
// call, a bearer token, and a follower's 307 to the leader followed (at most
// three hops, the same method and body). Plain HTTP on the address given.
#include <chrono>
#include <string>

namespace baton::ctl {

struct ApiReply {
  int status = 0;           ///< 0: no answer (see `error`)
  std::string body;         ///< JSON for every /api/v1 answer
  std::string error;        ///< why there was no answer (connect, timeout, bad redirect)
  std::string answered_by;  ///< HOST:PORT that answered (after redirects)
};

/// `s` as one percent-encoded path segment ("a b" -> "a%20b").
std::string path_segment(const std::string& s);

class ApiClient {
 public:
  ApiClient(std::string addr, std::string token, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ApiReply call(const std::string& method, const std::string& target, const std::string& body = "",
                const std::string& idempotency_key = "") const;
  const std::string& addr() const { return addr_; }

 private:
  std::string addr_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

}  // namespace baton::ctl
