#pragma once
// The sum of several slices' verdicts: what `baton verify` prints and a
// sweep records (per invariant examined and violations, the evidence up to
// a bound, what could not be examined).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "baton/verify/slice_verdict.h"

namespace baton::verify {

struct VerifyTally {
  std::int64_t runs = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_invariant;  ///< examined, violations
  std::map<std::string, std::string> not_examinable;
  std::vector<store::InvariantViolation> violations;  ///< at most `evidence_max`
  std::int64_t violations_total = 0;
  std::map<std::string, std::int64_t> totals;

  static constexpr std::size_t evidence_max = 200;

  void add(const SliceVerdict& verdict, std::int64_t slice_runs);
  bool ok() const { return violations_total == 0; }
  /// A table per invariant, then each violation, then what was not examined.
  std::string text() const;
  std::string json() const;
};

}  // namespace baton::verify
