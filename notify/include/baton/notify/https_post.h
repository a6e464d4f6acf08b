#pragma once
// The one Beast translation unit of webhook delivery: an HTTPS POST, its
// receiver's certificate verified against the trust the node's config
// gives webhooks (a CA file, or the system's roots) and the url's host,
// bounded by a timeout from connect to the answer, and sent only to the
// resolved addresses the destination policy allows. Redirects are answers,
// never followed.
#include <memory>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/notify/delivery_policy.h"
#include "baton/notify/destination_policy.h"
#include "baton/tls/tls_files.h"

namespace baton::notify {

class HttpsPoster {
 public:
  /// Errors name the CA file that cannot be loaded.
  static Result<std::unique_ptr<HttpsPoster>> make(const tls::ClientFiles& trust, Millis timeout,
                                                   DestinationPolicy destinations = {});
  ~HttpsPoster();
  HttpsPoster(const HttpsPoster&) = delete;
  HttpsPoster& operator=(const HttpsPoster&) = delete;

  /// One POST; no status when it got no answer (the error says why).
  HttpAnswer post(const OutgoingPost& p) const;

 private:
  struct Trust;
  HttpsPoster(std::unique_ptr<Trust> trust, Millis timeout, DestinationPolicy destinations);
  std::unique_ptr<Trust> trust_;
  Millis timeout_;
  DestinationPolicy destinations_;
};

}  // namespace baton::notify
