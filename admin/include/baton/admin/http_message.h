#pragma once
// An HTTP request as the admin API sees it and the response it gives: what
// the node's server (leader/, Beast) reads off a connection and writes back.
// No Beast here.
#include <map>
#include <string>

namespace baton::admin {

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

}  // namespace baton::admin
