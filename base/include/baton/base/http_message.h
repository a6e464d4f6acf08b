#pragma once
// An HTTP request and its response as plain values: what the node's server
// (leader/, Beast) reads off a connection and writes back, and what the
// admin API answers. Here, below both, so neither includes the other for
// them. No Beast here.
#include <map>
#include <string>

namespace baton {

struct HttpRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;
};

}  // namespace baton
