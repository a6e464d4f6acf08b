#pragma once
// The three answers a fenced write can get. None of them is an error:
// Conflict and Fenced are the normal way a writer learns it lost a race.
#include <string_view>

#include "baton/base/ids.h"

namespace baton::store {

enum class WriteOutcome {
  applied,   ///< the row matched every predicate and was written
  conflict,  ///< version or state moved (or no such row): re-read, never retry blindly
  fenced,    ///< a newer epoch holds the lease: this writer is no longer leader
};

std::string_view to_string(WriteOutcome o);

}  // namespace baton::store
