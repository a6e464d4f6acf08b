#pragma once
// A worker's own credential (docs/security.md, "Worker identity"). The
// operator's bootstrap token (enrollment_token_file: single use, expiring,
// made for this worker id by `baton ctl workers enroll`) is traded once, at
// POST /api/v1/enroll on any coordinator, for a credential bound to this
// worker id; the credential is kept in credential_file (mode 0600) and is
// what the hello carries from then on.
//
// A bootstrap file newer than the credential is a new token from the
// operator (`baton ctl workers rotate`): the worker enrolls again, once per
// version of the file; the node then revokes the old credential. A refused
// bootstrap token leaves the old credential in use.
#include <filesystem>
#include <optional>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/worker/worker_config.h"

namespace baton::worker {

class Enrollment {
 public:
  explicit Enrollment(const WorkerConfig& cfg) : cfg_(cfg) {}

  /// The worker enrolls (enrollment_token_file is set).
  bool enabled() const { return !cfg_.enrollment_token_path.empty(); }
  /// There is no credential yet, or a bootstrap file not yet tried is newer
  /// than it.
  bool due() const;
  /// The credential to present, enrolling first when due(); `timeout` bounds
  /// each step of each coordinator's exchange. An error says why there is
  /// no credential (the coordinators' answers, or the bootstrap's refusal).
  Result<std::string> credential(Millis timeout);

 private:
  Result<std::string> enroll(Millis timeout);

  const WorkerConfig& cfg_;
  /// The bootstrap file's stamp last traded (or refused): not tried again.
  std::optional<std::filesystem::file_time_type> tried_;
};

/// Writes `text` to `path` readable by its owner only, atomically (a
/// temporary file, fsync, rename).
Result<void> write_private_file(const std::string& path, const std::string& text);

}  // namespace baton::worker
