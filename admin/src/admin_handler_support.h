#pragma once
// What the admin API's handlers share (admin_handlers*.cpp): the answers to
// an id or a name that is not one.
#include <string>

#include "admin_http.h"
#include "baton/base/json_text.h"

namespace baton::admin::admin_http {

inline HttpResponse bad_id(const std::string& what, const std::string& got) {
  return error(400, "bad_request", what + " must be a positive integer, got " + json_quote(got.substr(0, 64)));
}

inline HttpResponse bad_name(const std::string& what, const std::string& got) {
  return error(
      400, "bad_request",
      what + " " + json_quote(got.substr(0, 64)) + " is not valid (1-200 characters: letters, digits, '-', '_', '.')");
}

}  // namespace baton::admin::admin_http
