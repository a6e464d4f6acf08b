#pragma once
// What a PEM certificate file says, for `baton doctor`: who it is for, the
// names it carries and until when it is valid.
#include <string>
#include <vector>

#include "baton/base/result.h"

namespace baton::tls {

struct CertificateFacts {
  std::string subject;             ///< one line, e.g. "CN = baton node"
  std::vector<std::string> names;  ///< subjectAltName entries: "DNS:localhost", "IP:127.0.0.1"
  double not_after_unix = 0;       ///< the end of its validity
  bool self_signed = false;
};

/// The first certificate of a PEM file; errors name the file.
Result<CertificateFacts> read_certificate(const std::string& file);

/// Whether the first certificate of `file` names `host` (an IP address or a
/// host name), as a client dialing `host` checks it.
bool certificate_names_host(const std::string& file, const std::string& host);

}  // namespace baton::tls
